// The codecs this build of archivectl knows, in detection order: formats
// with a distinctive magic number first, the loosely detected ones
// (.butter's version byte, .echoreplay's text lines) last.

package main

import (
	"context"
	"io"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/butter"
	"github.com/replayarchive/replay/formats/hcrp"
	"github.com/replayarchive/replay/formats/sc2replay"
	"github.com/replayarchive/replay/formats/teehistorian"
	"github.com/replayarchive/replay/formats/vtx"
)

// codecs returns a fresh set of codecs (they hold no shared state).
func codecs() []formats.Codec {
	return []formats.Codec{
		teehistorian.New(),
		sc2replay.New(),
		vtx.Codec{},
		hcrpCodec{},
		butter.New(),
		butter.NewMilk(),
		butter.NewEchoReplay(),
	}
}

// codecByName returns the codec that wrote manifests of format name.
func codecByName(name string) formats.Codec {
	for _, c := range codecs() {
		if c.Name() == name {
			return c
		}
	}
	return nil
}

// hcrpCodec adds live segment-set directories to the HCRP codec, for
// ingest.DirInput.
type hcrpCodec struct{ hcrp.Codec }

func (hcrpCodec) IsDirInput(dir string) bool { return hcrp.IsSegmentSet(dir) }

func (hcrpCodec) OpenDir(dir string) (io.ReadCloser, error) { return hcrp.OpenSegmentSet(dir) }

func (c hcrpCodec) SplitDir(ctx context.Context, dir string, w formats.Writer) (*formats.Metadata, error) {
	return c.Codec.SplitSegmentSet(ctx, dir, w)
}
