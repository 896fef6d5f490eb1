// This file implements formats.Appendable: a DDNet server appends records
// to teehistorian/<game_uuid>.teehistorian for as long as a game runs, and
// the archive extends one live recording as they arrive (docs/live.md).

package teehistorian

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/formats"
)

var _ formats.Appendable = (*Codec)(nil)

// LiveID implements formats.Appendable: the id is the header's game_uuid.
func (*Codec) LiveID(head []byte) (uuid.UUID, string, int64, error) {
	rd, err := readHeader(bytes.NewReader(head))
	if err != nil {
		if rd.short {
			return uuid.Nil, "", 0, formats.ErrNeedMore
		}
		return uuid.Nil, "", 0, err
	}
	h := rd.Header()
	id, err := uuid.Parse(h.GameUUID)
	if err != nil {
		return uuid.Nil, "", 0, fmt.Errorf("teehistorian: header game_uuid %q is not a UUID, so the file cannot be a live recording", h.GameUUID)
	}
	return id, h.GameUUID, int64(len(h.Raw)), nil
}

// readHeader is NewReader returning the reader also on an error, whose
// short field says whether the input ended inside the header.
func readHeader(r io.Reader) (*Reader, error) {
	rd := &Reader{r: r, buf: make([]byte, 32<<10), keep: 0}
	if err := rd.readHeader(); err != nil {
		return rd, err
	}
	rd.keep = -1
	return rd, nil
}

// liveState is the metadata builder between two SplitTail calls: what the
// records already observed left that the next ones need (names and
// accounts per client, the events held back behind a JOIN still waiting
// for its player's name: at most maxQueued), with the metadata so far
// apart from its events, which the archive keeps.
type liveState struct {
	Meta     *formats.Metadata  `json:"meta"`
	Names    [MaxClients]string `json:"names"`
	Auth     [MaxClients]string `json:"auth"`
	Join     [MaxClients]int    `json:"join"`
	Dropped  int                `json:"dropped,omitempty"`
	Unlisted int                `json:"unlisted,omitempty"`
	MsgNames bool               `json:"msg_names,omitempty"`
	// Queue is metaBuilder.queue; Join numbers its JOINs from the
	// archived events' count (metaBuilder.qbase), as a sink's do.
	Queue []liveQueued `json:"queue,omitempty"`
	// Sink says the events went to the archive as they became final.
	// A state without it is an older build's, whose Join indexes archived
	// events (which it rewrote); those JOINs stay without a name.
	Sink bool `json:"sink,omitempty"`
}

// liveQueued is a queuedEvent in liveState.
type liveQueued struct {
	E    formats.Event `json:"e"`
	Wait bool          `json:"wait,omitempty"`
}

// SplitTail implements formats.Appendable. Events go to w as Split hands
// them to an EventWriter; those held back behind a JOIN waiting for its
// player's name wait in the state until it comes (or the file ends).
func (c *Codec) SplitTail(ctx context.Context, in formats.TailInput, w formats.Writer) (*formats.TailResult, error) {
	sink, ok := w.(formats.EventWriter)
	if !ok {
		return nil, errors.New("teehistorian: SplitTail needs a Writer that takes events (formats.EventWriter)")
	}
	var rd *Reader
	var mb *metaBuilder
	hadRecords := false
	if in.Resume == nil {
		var err error
		if rd, err = readHeader(in.R); err != nil {
			if rd.short && !in.Final {
				return nil, formats.ErrNeedMore
			}
			return nil, err
		}
		hdr := rd.Header()
		if err := w.Header(hdr.Raw); err != nil {
			return nil, fmt.Errorf("teehistorian: write header: %w", err)
		}
		mb = newMetaBuilder(hdr)
		mb.maxEvents = math.MaxInt // every event of a live recording is kept
		mb.qbase = in.Events
		rd.keep = rd.pos
	} else {
		var err error
		if rd, mb, err = c.resume(in); err != nil {
			return nil, err
		}
		hadRecords = true
	}
	mb.sink = sink
	resume := in.Resume
	if resume == nil {
		resume = appendResume(nil, &rd.st)
	}
	records, err := c.splitRecords(ctx, rd, mb, w, in.StartTick, resume, in.Offset+in.Seen, true)
	if err != nil {
		return nil, err
	}
	hadRecords = hadRecords || records > 0
	if rd.finished || in.Final {
		if err := mb.flush(0); err != nil {
			return nil, fmt.Errorf("teehistorian: events: %w", err)
		}
	}
	if !rd.finished && in.Final {
		// A server killed in the middle of a record: its bytes are kept
		// as they are, so that the recording is the file.
		tail, err := rd.rest(maxTrailing)
		if err != nil {
			return nil, err
		}
		if len(tail) > 0 {
			mb.meta.Warnings = append(mb.meta.Warnings, fmt.Sprintf("%d bytes of a half-written last record kept as they are", len(tail)))
			if err := w.Trailer(tail); err != nil {
				return nil, fmt.Errorf("teehistorian: write trailer: %w", err)
			}
		}
	}
	end := rd.Offset()
	ls := liveState{
		Meta: withoutEvents(mb.meta), Names: mb.names, Auth: mb.auth, Join: mb.join,
		Dropped: mb.dropped, Unlisted: mb.unlisted, MsgNames: mb.msgNames, Sink: true,
	}
	for _, q := range mb.queue {
		ls.Queue = append(ls.Queue, liveQueued{E: q.e, Wait: q.wait})
	}
	state, err := json.Marshal(ls)
	if err != nil {
		return nil, fmt.Errorf("teehistorian: live state: %w", err)
	}
	if !rd.finished {
		// Not kept in the state: the next call says it again, or not.
		mb.meta.Warnings = append(mb.meta.Warnings, fmt.Sprintf("file ends without FINISH at tick %d", rd.st.Tick))
	}
	meta := mb.finish(rd.st.Tick, hadRecords, rd.finished)
	return &formats.TailResult{Meta: meta, State: state, End: end, Finished: rd.finished}, nil
}

// resume rebuilds the reader and the metadata builder at the open tail
// chunk from the archived header, the chunk's resume state and the state
// the previous SplitTail returned.
func (c *Codec) resume(in formats.TailInput) (*Reader, *metaBuilder, error) {
	var hdr Header
	if len(in.Header) < len(Magic)+1 || !bytes.Equal(in.Header[:len(Magic)], Magic[:]) || in.Header[len(in.Header)-1] != 0 {
		return nil, nil, errors.New("teehistorian: archived header is not a teehistorian header")
	}
	hdr.Raw = in.Header
	hdr.JSON = in.Header[len(Magic) : len(in.Header)-1]
	if err := parseHeaderJSON(&hdr, hdr.JSON); err != nil {
		return nil, nil, fmt.Errorf("teehistorian: archived header: %w", err)
	}
	var ls liveState
	if err := json.Unmarshal(in.State, &ls); err != nil || ls.Meta == nil {
		return nil, nil, fmt.Errorf("teehistorian: live state: %v", err)
	}
	rd := &Reader{r: in.R, buf: make([]byte, 32<<10), keep: 0, base: in.Offset, hdr: hdr}
	if err := decodeResume(&rd.st, in.Resume); err != nil {
		return nil, nil, err
	}
	mb := &metaBuilder{meta: ls.Meta, names: ls.Names, auth: ls.Auth, join: ls.Join,
		players: make(map[string]int, len(ls.Meta.Players)), maxEvents: math.MaxInt,
		dropped: ls.Dropped, unlisted: ls.Unlisted, msgNames: ls.MsgNames, qbase: in.Events}
	if mb.meta.Attrs == nil {
		mb.meta.Attrs = map[string]string{}
	}
	for i, p := range mb.meta.Players {
		mb.players[p.Name] = i
	}
	mb.meta.Events = nil
	if len(ls.Queue) > maxQueued {
		return nil, nil, fmt.Errorf("teehistorian: live state holds %d queued events, more than %d", len(ls.Queue), maxQueued)
	}
	for _, q := range ls.Queue {
		mb.queue = append(mb.queue, queuedEvent{e: q.E, wait: q.Wait})
	}
	for cid, j := range mb.join {
		if !ls.Sink || j <= mb.qbase || j > mb.qbase+len(mb.queue) {
			mb.join[cid] = 0 // an older build's, or not a queued event
		}
	}
	return rd, mb, nil
}

// withoutEvents returns a copy of m without its events.
func withoutEvents(m *formats.Metadata) *formats.Metadata {
	c := *m
	c.Events = nil
	c.Warnings = append([]string(nil), m.Warnings...)
	return &c
}
