// Names of this package and of its in-package tests that the external tests
// (package teehistorian_test, the ones that need internal/gen/teehistoriangen,
// which imports this package) use.

package teehistorian

import (
	"bytes"
	"context"
	"testing"

	"github.com/replayarchive/replay/formats"
)

// MaxNameWait is maxNameWait, for the external tests.
const MaxNameWait = maxNameWait

// ColumnTail is the stream of SplitColumns that holds what the record
// syntax does not explain.
const ColumnTail = colTail

// FramesFresh is Frames with a walker of its own, not a pooled one: what
// the pooled walkers must give.
func FramesFresh(ctx context.Context, src formats.Source, r formats.Range, emit func(formats.Frame) error) error {
	w, err := newChunkWalker(src, r)
	if err != nil {
		return err
	}
	return frames(ctx, w, r, emit)
}

// Unexported parts of the codec that external tests exercise.
var (
	NewChunkReader = newChunkReader
	DecodeResume   = decodeResume
	AppendResume   = appendResume
	SecretArgs     = secretArgs
)

// Helpers of the in-package tests.
var (
	CorpusFiles        = corpusFiles
	CheckClip          = checkClip
	SampleHeader       = testHeader
	PlayerNames        = playerNames
	RedactRecording    = redact
	Leaks              = leaks
	CheckRedactedWhole = checkRedactedWhole
)

// VectorFiles returns the DDNet vectors as whole files (test header, then
// each vector's body), as fuzz seeds.
func VectorFiles(t testing.TB) [][]byte {
	hj, _ := testHeader().MarshalJSON()
	head := append(append(Magic[:], hj...), 0)
	var files [][]byte
	for _, v := range vectors {
		files = append(files, append(bytes.Clone(head), unhex(t, v.body)...))
	}
	return files
}

// CheckParseCommon is checkParseCommon, for generated files.
var CheckParseCommon = checkParseCommon

// WithoutSkim returns a copy of c that reads every record one by one.
func WithoutSkim(c *Codec) *Codec {
	d := *c
	d.noSkim = true
	return &d
}
