// This file opens a replay: the MPQ archive through our reader, the replay
// header from the user data, the protocol for its base build, and the inner
// streams decoded by our own bounded decoders (decoder.go) over s2prot's
// protocol tables.

package sc2replay

import (
	"errors"
	"fmt"
	"strings"

	"github.com/icza/s2prot"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/sc2replay/mpq"
)

// Inner file names.
const (
	fileDetails       = "replay.details"
	fileDetailsBackup = "replay.details.backup"
	fileInitData      = "replay.initData"
	fileInitBackup    = "replay.initData.backup"
	fileGameEvents    = "replay.game.events"
	fileMessageEvents = "replay.message.events"
	fileTrackerEvents = "replay.tracker.events"
	fileAttributes    = "replay.attributes.events"
)

// replay is an opened replay file.
type replay struct {
	arc       *mpq.Archive
	header    s2prot.Struct
	baseBuild int
	loops     int64
	proto     *protocol // nil when no table decodes the build
	guessed   bool      // proto is the nearest table that fits, not the build's own
}

// openReplay opens the MPQ archive in data and decodes the replay header.
// It fails when data is not an MPQ archive or has no decodable header; a
// build without a protocol table is not an error (proto stays nil).
func openReplay(data []byte) (*replay, error) {
	arc, err := mpq.Open(data)
	if err != nil {
		return nil, err
	}
	ud := arc.UserData()
	if len(ud) == 0 {
		return nil, formats.Errorf(Name, 0, "expected the MPQ user-data header (MPQ\\x1b) carrying the replay header")
	}
	if err := checkBlocks(arc, len(data)); err != nil {
		return nil, err
	}
	r := &replay{arc: arc}
	hp := headerProtocol()
	if hp == nil {
		return nil, fmt.Errorf("sc2replay: no protocol table to decode replay headers with")
	}
	h, _, err := decodeVersioned(hp, ud, hp.header)
	if err != nil {
		return nil, &formats.Error{Format: Name, Offset: 16, What: "expected a valid replay header (versioned SHeader) in the user data", Err: err}
	}
	r.header = h
	if r.header.Structv("version") == nil {
		return nil, formats.Errorf(Name, 16, "expected a replay header struct with a version in the user data")
	}
	sig := r.header.Stringv("signature")
	if len(sig) < len(signature) || sig[:len(signature)] != signature {
		return nil, formats.Errorf(Name, 16, "expected replay signature %q, got %q", signature, sig)
	}
	bb := r.header.Int("version", "baseBuild")
	if bb <= 0 || bb > 1<<30 {
		return nil, formats.Errorf(Name, 16, "expected a positive base build in the replay header, got %d", bb)
	}
	r.baseBuild = int(bb)
	r.loops = r.header.Int("elapsedGameLoops")
	if r.loops < 0 {
		return nil, formats.Errorf(Name, 16, "expected a non-negative elapsedGameLoops, got %d", r.loops)
	}
	if r.proto = protocolFor(r.baseBuild); r.proto == nil {
		r.proto, r.guessed = r.guessProtocol(), true
	}
	return r, nil
}

// checkBlocks verifies that the data of every existing block lies inside the
// file, so a truncated replay is refused even where Split does not read.
func checkBlocks(arc *mpq.Archive, size int) error {
	h := arc.Header()
	for i, b := range arc.Blocks() {
		if b.Flags&mpq.FlagExists == 0 {
			continue
		}
		start := h.Offset + b.Offset
		if b.Offset < 0 || start > int64(size) || int64(b.CompressedSize) > int64(size)-start {
			return formats.Errorf(Name, h.Offset+h.BlockTableOffset+int64(i)*16,
				"block %d: expected its %d bytes at file offset %d to lie inside the %d-byte file", i, b.CompressedSize, start, size)
		}
	}
	return nil
}

// stream reads an inner file, trying each name in turn (the anonymised
// replays keep details and initData only in the .backup files). It returns
// the bytes and the file's data offset, or an error wrapping mpq.ErrNotExist
// when none exists or all are empty.
func (r *replay) stream(names ...string) ([]byte, int64, error) {
	var first error
	for _, name := range names {
		f, err := r.arc.Stat(name)
		if err == nil {
			if limit := streamLimit(name); int64(f.FileSize) > limit {
				err = formats.Errorf(Name, f.DataOffset, "expected %s of at most %d bytes, the block declares %d", name, limit, f.FileSize)
			}
		}
		if err == nil {
			var b []byte
			if b, err = r.arc.Read(f); err == nil && len(b) > 0 {
				return b, f.DataOffset, nil
			}
		}
		if first == nil && err != nil && !errors.Is(err, mpq.ErrNotExist) {
			first = err
		}
	}
	if first != nil {
		return nil, 0, first
	}
	return nil, 0, fmt.Errorf("sc2replay: %s: %w", names[0], mpq.ErrNotExist)
}

// streamLimit bounds the decompressed size of the inner files, before they
// are read, by what the game writes: details and initData are a few KiB,
// message events (chat, pings) rarely reach 100 KiB; game and tracker
// events of long games reach a few MiB and are left to the MPQ reader's
// limits (mpq.DefaultMaxFileSize, mpq.DefaultBudget).
func streamLimit(name string) int64 {
	switch name {
	case fileDetails, fileDetailsBackup, fileInitData, fileInitBackup, fileAttributes:
		return 4 << 20
	case fileMessageEvents:
		return 16 << 20
	}
	return mpq.DefaultMaxFileSize
}

// required reads a stream the metadata cannot do without; a missing one is a
// *formats.Error at the hash table, where the lookup failed.
func (r *replay) required(names ...string) ([]byte, int64, error) {
	b, off, err := r.stream(names...)
	if errors.Is(err, mpq.ErrNotExist) {
		h := r.arc.Header()
		return nil, 0, &formats.Error{Format: Name, Offset: h.Offset + h.HashTableOffset,
			What: fmt.Sprintf("expected %s in the MPQ hash table", strings.Join(names, " or ")), Err: err}
	}
	return b, off, err
}

// details decodes replay.details (or its backup).
func (r *replay) details() (s2prot.Struct, error) {
	b, off, err := r.required(fileDetails, fileDetailsBackup)
	if err != nil {
		return nil, err
	}
	s, _, err := decodeVersioned(r.proto, b, r.proto.details)
	if err != nil {
		return nil, &formats.Error{Format: Name, Offset: off, What: "expected valid replay.details (versioned SDetails)", Err: err}
	}
	return s, nil
}

// initData decodes replay.initData (or its backup).
func (r *replay) initData() (s2prot.Struct, error) {
	b, off, err := r.required(fileInitData, fileInitBackup)
	if err != nil {
		return nil, err
	}
	s, _, err := decodeBitPacked(r.proto, b, r.proto.initData)
	if err != nil {
		return nil, &formats.Error{Format: Name, Offset: off, What: "expected valid replay.initData (bit-packed SInitData)", Err: err}
	}
	return s, nil
}

// events opens one event stream for decoding event by event. A missing
// stream gives an iterator with no events (tracker events exist only from
// 2.0.8).
func (r *replay) events(name string) (*events, error) {
	b, off, err := r.stream(name)
	if errors.Is(err, mpq.ErrNotExist) {
		b, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	es, ok := r.proto.stream(name)
	if !ok {
		b = nil
	}
	return &events{eventIter: newEventIter(r.proto, b, es), name: name, off: off}, nil
}

// events is an event stream being decoded, with what its errors need.
type events struct {
	*eventIter
	name string
	off  int64
}

// Err returns the decoding error, if any, as a *formats.Error at the
// stream's data offset.
func (e *events) Err() error {
	if e.err == nil {
		return nil
	}
	return &formats.Error{Format: Name, Offset: e.off, What: fmt.Sprintf("expected valid %s; decoded %d events before", e.name, e.n), Err: e.err}
}

// standardFlags are the block flags StarCraft II writes for every non-empty
// inner file: exists, single unit, compressed.
const standardFlags = 0x81000200

// layoutWarning describes an archive whose blocks differ from what the game
// writes (encrypted or sectored files), which means a third-party tool
// repacked it; empty when the layout is the game's own.
func layoutWarning(r *replay) string {
	var enc, sectored int
	for _, b := range r.arc.Blocks() {
		if b.Flags&mpq.FlagExists == 0 || b.FileSize == 0 || b.Flags == standardFlags {
			continue
		}
		if b.Flags&mpq.FlagEncrypted != 0 {
			enc++
		}
		if b.Flags&mpq.FlagSingleUnit == 0 {
			sectored++
		}
	}
	if enc == 0 && sectored == 0 {
		return ""
	}
	return fmt.Sprintf("MPQ archive was repacked by another tool: %d encrypted and %d sectored files where StarCraft II writes single-unit files", enc, sectored)
}
