// The codecs this build of archivectl knows, in detection order.

package main

import (
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/sc2replay"
	"github.com/replayarchive/replay/formats/teehistorian"
)

// codecs returns a fresh set of codecs (they hold no shared state).
func codecs() []formats.Codec {
	return []formats.Codec{
		teehistorian.New(),
		sc2replay.New(),
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
