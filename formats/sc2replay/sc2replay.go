// Package sc2replay is the codec for StarCraft II replays (.SC2Replay): MPQ
// archives read by our own reader (package mpq) whose inner streams are
// decoded by our own bounded decoders over the protocol tables of
// github.com/icza/s2prot.
//
// An MPQ archive cannot be cut by game loop, so Split stores the file as one
// precompressed chunk covering every loop, with no header and no trailer.
// Metadata comes from the replay header, replay.details, replay.initData and
// replay.message.events; Frames decodes the game, message and tracker events.
// Clips are not supported.
package sc2replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/internal/bounded"
)

// Name is the codec's format name.
const Name = "sc2replay"

// signature starts the replay header's m_signature ("StarCraft II replay\x1b11").
const signature = "StarCraft II replay"

// DefaultMaxSize is the default bound on the size of a replay Split accepts.
// Real replays are well under 10 MiB.
const DefaultMaxSize = 256 << 20

// Codec implements formats.Codec for StarCraft II replays. It holds no
// state besides its limit and is safe for concurrent use.
type Codec struct {
	// MaxSize bounds the file size Split accepts: Split holds the whole
	// file in memory because MPQ needs random access. Zero or less means
	// DefaultMaxSize.
	MaxSize int64
}

// New returns a Codec with MaxSize DefaultMaxSize.
func New() *Codec { return &Codec{MaxSize: DefaultMaxSize} }

var _ formats.Codec = (*Codec)(nil)

// Name implements formats.Codec.
func (c *Codec) Name() string { return Name }

// Detect implements formats.Codec: the file starts with the MPQ user-data
// header and its user data holds the replay signature.
func (c *Codec) Detect(head []byte) bool {
	if len(head) < 16 || string(head[:4]) != "MPQ\x1b" {
		return false
	}
	end := min(len(head), 16+int(min(uint32(len(head)), le32(head[12:]))))
	return bytes.Contains(head[16:end], []byte(signature))
}

func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// Split implements formats.Codec. It reads the whole file (at most MaxSize
// bytes), checks the MPQ structure and decodes the metadata, then writes the
// file as one precompressed chunk [0, game loops). A replay whose base build
// has no protocol table is decoded with the nearest table that fits it
// (with a warning naming both builds); when none fits it splits with
// header-only metadata and a warning.
func (c *Codec) Split(ctx context.Context, r io.Reader, w formats.Writer) (*formats.Metadata, error) {
	limit := c.MaxSize
	if limit <= 0 {
		limit = DefaultMaxSize
	}
	data, err := bounded.ReadAll(r, limit, "replay")
	if errors.Is(err, bounded.ErrLimit) {
		return nil, formats.Errorf(Name, limit, "expected a replay of at most %d bytes (the whole file is held in memory)", limit)
	}
	if err != nil {
		return nil, fmt.Errorf("sc2replay: reading: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	meta, err := c.metadata(data)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ch := formats.Chunk{StartTick: 0, Ticks: meta.Ticks, Precompressed: true}
	if err := w.Chunk(ch, data); err != nil {
		return nil, fmt.Errorf("sc2replay: writing chunk: %w", err)
	}
	return meta, nil
}

// Metadata returns the metadata of the replay in data without splitting it.
func (c *Codec) Metadata(data []byte) (*formats.Metadata, error) {
	return c.metadata(data)
}

func (c *Codec) metadata(data []byte) (*formats.Metadata, error) {
	rep, err := openReplay(data)
	if err != nil {
		return nil, err
	}
	var meta *formats.Metadata
	if rep.proto == nil {
		meta = rep.headerMetadata(speedFaster)
		meta.Attrs["duration_basis"] += ", assumed: no protocol to read the speed"
		if rep.baseBuild >= lotvBaseBuild {
			meta.Attrs["expansion"] = "LotV"
		}
		meta.Warnings = append(meta.Warnings, fmt.Sprintf(
			"no protocol table for base build %d (version %s), and none of the %d nearest known tables decodes it: metadata comes from the replay header only; frames cannot be decoded",
			rep.baseBuild, meta.Attrs["version"], maxCandidates))
	} else if meta, err = rep.metadata(); err != nil {
		return nil, err
	}
	if rep.proto != nil && rep.guessed {
		meta.Attrs["protocol_build"] = strconv.Itoa(rep.proto.build)
		meta.Warnings = append(meta.Warnings, fmt.Sprintf(
			"no protocol table for base build %d (version %s): decoded with the table of base build %d, the nearest that decodes its details, initData and message events exactly",
			rep.baseBuild, meta.Attrs["version"], rep.proto.build))
	}
	if w := layoutWarning(rep); w != "" {
		meta.Warnings = append(meta.Warnings, w)
	}
	return meta, nil
}

// Clip implements formats.Codec. MPQ replays cannot be cut: the game events
// only replay from loop 0 and the archive's streams are compressed whole.
func (c *Codec) Clip(ctx context.Context, src formats.Source, r formats.Range, w io.Writer) error {
	return fmt.Errorf("%s: a replay cannot be cut to loops %v: the game state is only reproducible from loop 0 and the MPQ streams are compressed as a whole; export the whole file instead: %w",
		Name, r, formats.ErrClipUnsupported)
}
