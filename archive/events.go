// A recording's searchable events as they arrive during its ingest: a JSON
// array compressed as it is written, so that neither the codec nor the
// Pending holds the events themselves until the commit (issue 13: a server
// file of days holds hundreds of thousands; issue 15: bounded memory).

package archive

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/replayarchive/replay/formats"
)

// eventWindow is the zstd window of the events' stream. Events repeat
// within minutes of play (the same commands, the same players), so a
// larger window buys little, while the encoder holds twice the window.
const eventWindow = 256 << 10

// eventEncoders holds idle event-stream encoders (as chunkEncoders).
var eventEncoders sync.Pool

// eventStream compresses a recording's events as a JSON array: the value
// Archive.EachEvent and Archive.Events read back.
type eventStream struct {
	buf bytes.Buffer
	enc *zstd.Encoder
	js  *json.Encoder
	n   int
}

// add appends e to the stream, starting it on the first event.
func (s *eventStream) add(e *formats.Event) error {
	if s.enc == nil {
		enc, ok := eventEncoders.Get().(*zstd.Encoder)
		if !ok {
			var err error
			enc, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBetterCompression),
				zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(eventWindow), zstd.WithLowerEncoderMem(true))
			if err != nil {
				return fmt.Errorf("archive: events: %w", err)
			}
		}
		enc.Reset(&s.buf)
		s.enc, s.js = enc, json.NewEncoder(enc)
	}
	sep := []byte{','}
	if s.n == 0 {
		sep[0] = '['
	}
	if _, err := s.enc.Write(sep); err != nil {
		return fmt.Errorf("archive: events: %w", err)
	}
	if err := s.js.Encode(e); err != nil {
		return fmt.Errorf("archive: event %d: %w", s.n, err)
	}
	s.n++
	return nil
}

// close ends the array and returns the compressed value (nil without
// events) and how many events it holds. The encoder goes back to the pool.
func (s *eventStream) close() ([]byte, int, error) {
	if s.enc == nil {
		return nil, 0, nil
	}
	enc := s.enc
	s.enc, s.js = nil, nil
	_, err := enc.Write([]byte{']'})
	if cerr := enc.Close(); err == nil {
		err = cerr
	}
	enc.Reset(io.Discard)
	eventEncoders.Put(enc)
	if err != nil {
		return nil, 0, fmt.Errorf("archive: events: %w", err)
	}
	return s.buf.Bytes(), s.n, nil
}

// drop releases the stream of a recording that will not be committed.
func (s *eventStream) drop() {
	if s.enc != nil {
		s.enc.Reset(io.Discard)
		eventEncoders.Put(s.enc)
		s.enc, s.js = nil, nil
	}
	s.buf = bytes.Buffer{}
}

// Event implements formats.EventWriter: the event is compressed into the
// recording's stream at once, so a recording of any number of events holds
// only their compressed form until the commit.
func (p *Pending) Event(e formats.Event) error {
	if p.meta != nil {
		return fmt.Errorf("archive: event after Finish")
	}
	return p.events.add(&e)
}
