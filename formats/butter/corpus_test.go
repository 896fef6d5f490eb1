// This file loads the shared reference corpus for the tests: the input
// frame sets, the reference writer's .butter files and the reference
// reader's decoded dumps.

package butter

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/replayarchive/replay/formats/formatstest"
)

// refFile is one reference .butter file: <set>.<compression>.k<K>.butter.
type refFile struct {
	Path        string
	Set         string
	Compression Compression
	K           int
}

func corpusDir(t testing.TB) string { return formatstest.CorpusDir(t, "butter") }

func refFiles(t testing.TB) []refFile {
	dir := filepath.Join(corpusDir(t), "reference", "butter")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []refFile
	for _, e := range ents {
		parts := strings.Split(strings.TrimSuffix(e.Name(), ".butter"), ".")
		if len(parts) != 3 || !strings.HasSuffix(e.Name(), ".butter") {
			continue
		}
		c, err := ParseCompression(parts[1])
		if err != nil {
			t.Fatal(err)
		}
		k, err := strconv.Atoi(strings.TrimPrefix(parts[2], "k"))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, refFile{filepath.Join(dir, e.Name()), parts[0], c, k})
	}
	if len(out) == 0 {
		t.Fatal("no reference .butter files")
	}
	return out
}

var (
	zstdCacheMu sync.Mutex
	zstdCache   = map[string][]byte{}
)

// readZst returns the decompressed content of a corpus .zst file (cached
// for the test binary's lifetime).
func readZst(t testing.TB, path string) []byte {
	zstdCacheMu.Lock()
	defer zstdCacheMu.Unlock()
	if b, ok := zstdCache[path]; ok {
		return b
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d, err := zstd.NewReader(nil, zstd.WithDecoderMaxMemory(64<<20), zstd.WithDecoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	b, err := d.DecodeAll(raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	zstdCache[path] = b
	return b
}

var (
	inputMu    sync.Mutex
	inputCache = map[string][]*Frame{}
)

// inputFrames returns an input set's frames (parsed once; do not modify).
func inputFrames(t testing.TB, set string) []*Frame {
	b := readZst(t, filepath.Join(corpusDir(t), "reference", "input", set+".echoreplay.zst"))
	inputMu.Lock()
	defer inputMu.Unlock()
	if fs, ok := inputCache[set]; ok {
		return fs
	}
	fs, err := ReadEchoReplay(b)
	if err != nil {
		t.Fatal(err)
	}
	inputCache[set] = fs
	return fs
}

func osStat(p string) (os.FileInfo, error) { return os.Stat(p) }

func readFile(t testing.TB, path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
