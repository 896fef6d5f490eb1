// This file implements formats.Redactor: a copy of an archived recording, or
// of a tick range of it, with the secrets of secrets.go replaced.

package teehistorian

import (
	"bufio"
	"context"
	"fmt"
	"io"

	"github.com/replayarchive/replay/formats"
)

var _ formats.Redactor = (*Codec)(nil)

// Redact implements formats.Redactor. The header's secret config values
// become "[redacted]" and so do the secret arguments of console commands;
// everything else is kept.
//
// For the whole recording (r.IsAll()) every other record is copied
// byte for byte, so the file differs from the original only where a secret
// was; a file without FINISH stays without it, and bytes after FINISH (which
// no reader looks at, and which could hold anything) are left out. For a
// tick range it writes what Clip writes, with the same replacements.
func (c *Codec) Redact(ctx context.Context, src formats.Source, r formats.Range, w io.Writer) error {
	if !r.IsAll() {
		return c.clip(ctx, src, r, w, true)
	}
	wk, err := newChunkWalker(src, formats.All())
	if err != nil {
		return err
	}
	raw, err := redactedHeader(wk.hdr)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	if _, err := bw.Write(raw); err != nil {
		return fmt.Errorf("teehistorian: redact: write header: %w", err)
	}
	var scratch []byte
	for {
		it, err := wk.peek(ctx)
		if errIsEOF(err) {
			break
		}
		if err != nil {
			return err
		}
		rec := wk.rd.buf[wk.rd.pos : wk.rd.pos+it.Size]
		if it.Type == ItemConsoleCommand {
			if scratch, err = redactedCommand(scratch[:0], it); err != nil {
				return err
			}
			if scratch != nil {
				rec = scratch
			}
		}
		if _, err := bw.Write(rec); err != nil {
			return fmt.Errorf("teehistorian: redact: write at tick %d: %w", it.Tick, err)
		}
		wk.commit()
		if it.Type == ItemFinish {
			break
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("teehistorian: redact: %w", err)
	}
	return nil
}

// redactedHeader returns the header block (magic, JSON, NUL) with the
// values of secret config variables replaced.
func redactedHeader(h *Header) ([]byte, error) {
	text, err := redactHeaderJSON(h.JSON)
	if err != nil {
		return nil, &formats.Error{Format: Name, Offset: int64(len(Magic)), What: "bad JSON header", Err: err}
	}
	raw := make([]byte, 0, len(Magic)+len(text)+1)
	return append(append(append(raw, Magic[:]...), text...), 0), nil
}

// redactedCommand appends the CONSOLE_COMMAND record it with its secret
// arguments replaced to b, or returns nil when nothing is secret. A
// replacement can be longer than what it replaces (up to len(Redacted) bytes
// per argument); a record that would then pass MaxRecordBytes, which no
// reader would accept, is an error.
func redactedCommand(b []byte, it *Item) ([]byte, error) {
	args, changed := RedactArgs(it.Cmd, it.Args)
	if !changed {
		return nil, nil
	}
	b = appendConsoleCommand(b, it.Cid, it.Flags, it.Cmd, args)
	if len(b) > MaxRecordBytes {
		return nil, formats.Errorf(Name, it.Offset, "expected a redacted console command of at most %d bytes, got %d", MaxRecordBytes, len(b))
	}
	return b, nil
}
