// Package all is the registry of every codec this module has, in detection
// order. It is the one place that lists them: the archive, the command line
// and the server all take their codecs from here.
package all

import (
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/butter"
	"github.com/replayarchive/replay/formats/hcrp"
	"github.com/replayarchive/replay/formats/sc2replay"
	"github.com/replayarchive/replay/formats/teehistorian"
	"github.com/replayarchive/replay/formats/vtx"
)

// Codecs returns a fresh set of codecs in detection order: formats with a
// distinctive magic number first, the loosely detected ones (.butter's
// version byte, .echoreplay's text lines) last, so that a loose check never
// claims a file a strict one would have recognised. Codecs hold no shared
// state, so each caller may keep its own set.
func Codecs() []formats.Codec {
	return []formats.Codec{
		teehistorian.New(),
		sc2replay.New(),
		vtx.New(),
		hcrp.New(),
		butter.New(),
		butter.NewMilk(),
		butter.NewEchoReplay(),
	}
}

// ByName returns the codec that reads and writes format name (as stored in
// manifests), or nil when this build has none.
func ByName(name string) formats.Codec {
	for _, c := range Codecs() {
		if c.Name() == name {
			return c
		}
	}
	return nil
}

// Names lists the format names in detection order, for help texts and for
// errors that reject an unknown format name.
func Names() []string {
	cs := Codecs()
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name()
	}
	return names
}
