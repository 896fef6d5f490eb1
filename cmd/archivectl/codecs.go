package main

import (
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/all"
)

// codecs returns a fresh set of this build's codecs, in detection order.
func codecs() []formats.Codec { return all.Codecs() }

// codecByName returns the codec that wrote manifests of format name.
func codecByName(name string) formats.Codec { return all.ByName(name) }
