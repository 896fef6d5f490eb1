package replay

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/catalog"
	"github.com/replayarchive/replay/formats/ddnetmap"
	"github.com/replayarchive/replay/internal/durable"
)

// Maps: the DDNet maps the operator's servers play, so that a moderator
// sees a teehistorian recording against its map's game layer (the web
// page draws it under the trails). A teehistorian header names its map
// by sha256 (the recording's attrs map_sha256); the operator adds the
// map files (archivectl maps add, POST /api/v1/maps), each kept whole
// under <archive>/maps/<sha256>.map, written to a temporary file beside
// it, synced and renamed, so a reader finds a whole map or none. Maps
// are few and small (a DDNet map is a few MiB at most), so they live
// beside the catalog rather than in it, and are read again for each
// answer (the game layer of a 1 MiB map reads in milliseconds); the API
// lets clients cache them by sha256, which never changes its bytes.
//
// With a shared catalog (several nodes), a map added on one node is an
// entry of the catalog (kindMap: key its sha256, value its bytes) and
// every node stores it as its own: the operator adds each map once. A
// map larger than the catalog's 16 MiB entry stays on its node (said in
// the answer); DDNet's maps are far smaller.

// MaxMapBytes bounds one map file: DDNet's own maps are far smaller
// (Tutorial is 1 MiB), and the reader bounds what it decompresses.
const MaxMapBytes = 64 << 20

// mapsDir is the directory under the archive's that holds the maps.
const mapsDir = "maps"

// AuditMapAdd is the audit action of a map added to the archive.
const AuditMapAdd = "map-add"

// ErrNoMap is returned for a map the archive does not hold: a sha256 no
// map was added under, or a recording whose header names no map or a map
// not added (the error says which).
var ErrNoMap = errors.New("no such map")

// ErrBadMap is returned for a file that is not a valid DDNet map (it
// wraps the reader's error, which names the byte and what was expected
// there) or is too large: the caller's input, nothing is stored.
var ErrBadMap = errors.New("not a map")

// ErrBadMapID is returned for a map key that is not a sha256 in hex.
var ErrBadMapID = errors.New("a map is named by its sha256: 64 hex digits")

// MapInfo describes a stored map.
type MapInfo struct {
	SHA256 string
	CRC    string
	Size   int64
	Width  int
	Height int
}

func mapInfo(m *ddnetmap.Map) MapInfo {
	return MapInfo{SHA256: m.SHA256Hex(), CRC: m.CRCHex(), Size: m.Size, Width: m.Game.Width, Height: m.Game.Height}
}

// MapAdded is what AddMap did: the map's facts, whether the archive held
// it already (then nothing was written and nothing audited), and, on a
// node of a shared catalog, why the map stays on this node ("" when it
// was shared).
type MapAdded struct {
	MapInfo
	Existed   bool
	NotShared string
}

// AddMap reads a map file from r (at most limit bytes, MaxMapBytes when
// limit ≤ 0), checks it with the ddnetmap reader and stores it under its
// sha256, auditing the add. A file that is not a map is ErrBadMap
// (wrapping the reader's reason) or ErrTooLarge; name is only for
// messages and the audit entry.
func (x *Archive) AddMap(ctx context.Context, by Actor, name string, r io.Reader) (*MapAdded, error) {
	if x.opts.ReadOnly {
		return nil, ErrReadOnly
	}
	dir := filepath.Join(x.dir, mapsDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("maps directory: %w", err)
	}
	// The bytes go to a temporary file first: the reader needs to seek,
	// and a map is never held whole in memory.
	f, err := os.CreateTemp(dir, ".add-*.tmp")
	if err != nil {
		return nil, fmt.Errorf("spool map: %w", err)
	}
	tmp := f.Name()
	keep := false
	defer func() {
		if !keep {
			f.Close()
			os.Remove(tmp)
		}
	}()
	n, err := io.Copy(f, contextReader{ctx, io.LimitReader(r, MaxMapBytes+1)})
	if err != nil {
		return nil, fmt.Errorf("receive map %s: %w", name, err)
	}
	if n > MaxMapBytes {
		return nil, fmt.Errorf("map %s: %w (%d bytes)", name, ErrTooLarge, MaxMapBytes)
	}
	m, err := ddnetmap.Read(f, n)
	if err != nil {
		if errors.Is(err, ddnetmap.ErrFormat) || errors.Is(err, ddnetmap.ErrTooLarge) {
			return nil, fmt.Errorf("%s: %w: %w", name, ErrBadMap, err)
		}
		return nil, fmt.Errorf("read map %s: %w", name, err)
	}
	out := &MapAdded{MapInfo: mapInfo(m)}
	// Shared first, as the other shared state is (a map the catalog
	// holds already is put again: nothing changes).
	done := x.change()
	defer done()
	if err := x.publishMap(ctx, out, tmp, n); err != nil {
		return nil, fmt.Errorf("map %s: %w", name, err)
	}
	final := x.mapPath(out.SHA256)
	if _, err := os.Stat(final); err == nil {
		out.Existed = true
		return out, nil
	}
	if err := f.Sync(); err != nil {
		return nil, fmt.Errorf("sync map %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("write map %s: %w", name, err)
	}
	if err := os.Rename(tmp, final); err != nil {
		return nil, fmt.Errorf("store map %s: %w", name, err)
	}
	keep = true
	if err := durable.SyncDir(dir); err != nil {
		return nil, fmt.Errorf("store map %s: %w", name, err)
	}
	x.audit(archive.AuditEntry{Who: by.Name, Action: AuditMapAdd,
		Detail: fmt.Sprintf("%s (%s, %d bytes, game layer %d×%d)", out.SHA256, filepath.Base(name), out.Size, out.Width, out.Height)})
	return out, nil
}

// kindMap is the shared catalog's kind of maps: key a map's sha256, value
// its bytes.
const kindMap catalog.Kind = "map"

// maxSharedMap is the largest map the shared catalog carries (its entries'
// bound).
const maxSharedMap = 16 << 20

// publishMap puts the map of out, n bytes in the file at path, into the
// shared catalog (when there is one); a map too large for it stays on
// this node, which out.NotShared says.
func (x *Archive) publishMap(ctx context.Context, out *MapAdded, path string, n int64) error {
	if x.shared == nil {
		return nil
	}
	if n > maxSharedMap {
		out.NotShared = fmt.Sprintf("%d bytes, more than the %d a shared catalog's entry holds: add it on each node", n, maxSharedMap)
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read it for the shared catalog: %w", err)
	}
	if _, err := x.shared.cat.Put(ctx, kindMap, out.SHA256, b, x.shared.node); err != nil {
		return fmt.Errorf("shared catalog: %w (nothing changed)", err)
	}
	return nil
}

// applyMap stores the map another node added (a kindMap entry): its bytes
// must read as a map hashing to its key. Maps are never removed.
func (x *Archive) applyMap(e catalog.Entry) error {
	if e.Deleted || !validMapID(e.Key) {
		return nil
	}
	if _, err := os.Stat(x.mapPath(e.Key)); err == nil {
		return nil
	}
	m, err := ddnetmap.Read(bytes.NewReader(e.Value), int64(len(e.Value)))
	if err != nil {
		return fmt.Errorf("map %s: %w", e.Key, err)
	}
	if m.SHA256Hex() != e.Key {
		return fmt.Errorf("map %s: its bytes hash to %s", e.Key, m.SHA256Hex())
	}
	dir := filepath.Join(x.dir, mapsDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("maps directory: %w", err)
	}
	if err := durable.WriteFile(x.mapPath(e.Key), e.Value, 0o644, true); err != nil {
		return fmt.Errorf("store map %s: %w", e.Key, err)
	}
	return durable.SyncDir(dir)
}

// seedMaps gives the shared catalog this archive's maps (seedCatalog),
// those it can carry.
func (x *Archive) seedMaps(ctx context.Context) error {
	infos, _, err := x.Maps()
	if err != nil {
		return err
	}
	for _, mi := range infos {
		b, err := os.ReadFile(x.mapPath(mi.SHA256))
		if err != nil {
			return err
		}
		if len(b) > maxSharedMap {
			continue
		}
		if _, err := x.shared.cat.Create(ctx, kindMap, mi.SHA256, b, x.shared.node); err != nil && !errors.Is(err, catalog.ErrExists) {
			return err
		}
	}
	return nil
}

// AddMapFile adds the map file at path (see AddMap).
func (x *Archive) AddMapFile(ctx context.Context, by Actor, path string) (*MapAdded, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return x.AddMap(ctx, by, path, f)
}

func (x *Archive) mapPath(sha string) string {
	return filepath.Join(x.dir, mapsDir, sha+".map")
}

// validMapID reports whether s is a sha256 in lower-case hex.
func validMapID(s string) bool {
	if len(s) != 64 || strings.ToLower(s) != s {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// Map reads the stored map whose sha256 is sha (64 hex digits; upper
// case is taken): its game layer and facts. A map not added is ErrNoMap.
// The file is checked against its name, so a map damaged on disk is an
// error, never a wrong picture.
func (x *Archive) Map(sha string) (*ddnetmap.Map, error) {
	sha = strings.ToLower(sha)
	if !validMapID(sha) {
		return nil, fmt.Errorf("%q: %w", sha, ErrBadMapID)
	}
	f, err := os.Open(x.mapPath(sha))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("map %s was not added to the archive (archivectl maps add): %w", sha, ErrNoMap)
	}
	if err != nil {
		return nil, fmt.Errorf("open map: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("open map: %w", err)
	}
	m, err := ddnetmap.Read(f, st.Size())
	if err != nil {
		return nil, fmt.Errorf("stored map %s: %w", sha, err)
	}
	if m.SHA256Hex() != sha {
		return nil, fmt.Errorf("stored map %s: its bytes hash to %s (damaged on disk)", sha, m.SHA256Hex())
	}
	return m, nil
}

// RecordingMapSHA256 returns the sha256 of the map the recording that
// ref names was played on, as its file's header names it (a
// teehistorian's map_sha256), or "" when it names none.
func RecordingMapSHA256(m *archive.Manifest) string {
	s := strings.ToLower(m.Meta.Attrs["map_sha256"])
	if !validMapID(s) {
		return ""
	}
	return s
}

// RecordingMap reads the map the recording that ref names was played on.
// It is ErrNoMap when the recording names no map or the map was not
// added; the error says which.
func (x *Archive) RecordingMap(ref string) (*ddnetmap.Map, error) {
	man, err := x.Manifest(ref)
	if err != nil {
		return nil, err
	}
	sha := RecordingMapSHA256(man)
	if sha == "" {
		return nil, fmt.Errorf("recording %s names no map by sha256 (only DDNet teehistorian recordings do): %w", man.ID, ErrNoMap)
	}
	return x.Map(sha)
}

// Maps lists the stored maps by sha256. A file that no longer reads as
// a map is listed with its error rather than hidden.
func (x *Archive) Maps() ([]MapInfo, []error, error) {
	ents, err := os.ReadDir(filepath.Join(x.dir, mapsDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("maps directory: %w", err)
	}
	var out []MapInfo
	var bad []error
	for _, e := range ents {
		sha, ok := strings.CutSuffix(e.Name(), ".map")
		if !ok || !validMapID(sha) {
			continue
		}
		m, err := x.Map(sha)
		if err != nil {
			bad = append(bad, err)
			continue
		}
		out = append(out, mapInfo(m))
	}
	slices.SortFunc(out, func(a, b MapInfo) int { return strings.Compare(a.SHA256, b.SHA256) })
	return out, bad, nil
}
