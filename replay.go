// Package replay is the replay archive as a library: one value that owns an
// archive directory's catalog and shards (package archive), its search index
// (package query) and the codecs of every format (package formats/all).
//
// Every change goes through an Archive method, which commits it, brings the
// search index up to date and appends to the audit log in one place, so a
// program that embeds the archive, the command line and the HTTP server all
// keep the same rules:
//
//	x, err := replay.Open("replays.archive", replay.Options{Create: true})
//	...
//	defer x.Close()
//	err = x.Ingest(ctx, []string{"game.teehistorian"}, replay.IngestOptions{By: "bot"}, nil)
//	res, err := x.Search(ctx, "player:nameless cmd:kick", 0, 20)
//
// An Archive is safe for concurrent use by many goroutines. One process at a
// time may open an archive for writing; any number may open it read-only.
package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/all"
	"github.com/replayarchive/replay/query"
)

// ErrNoArchive is returned by Open for a directory that holds no archive
// and Options.Create is not set: read commands never create one.
var ErrNoArchive = errors.New("no archive there")

// ErrIndexSync is returned by a change whose catalog commit succeeded but
// whose search index could not be brought up to date: the change is made,
// searches miss it until Reindex rebuilds the index.
var ErrIndexSync = errors.New("search index: not brought up to date with the catalog")

// ErrLocked is returned by Open when another process has the archive open
// for writing; the error names that process when it said who it is.
var ErrLocked = errors.New("archive is locked by another process")

// ErrReadOnly is returned by changes to an archive opened read-only.
var ErrReadOnly = errors.New("archive was opened read-only")

// Options tune Open. The zero value opens an existing archive for writing.
type Options struct {
	// Create makes the archive directory when it does not exist yet.
	Create bool
	// ReadOnly opens the archive for reading only: other read-only opens
	// may run at the same time, and the search index is read as it is
	// (a writer keeps it up to date).
	ReadOnly bool
	// Wait is how long Open waits for another process to let go of the
	// archive (default 2 s).
	Wait time.Duration
	// Command describes the opening process in the lock file, so that a
	// second process that finds the archive locked can say who holds it.
	Command string
	// Archive and Index tune the storage engine and the search index.
	Archive archive.Options
	Index   query.Options
	// Logger receives warnings (default: discarded).
	Logger *slog.Logger
	// LiveIndexEvery, when set, lets the index syncs of live grows (Grow)
	// run at most this often, each taking every grow since the last
	// (livesync.go): a grow then returns before its bytes are searchable,
	// and they are within about this long. Zero syncs the index in every
	// grow before it returns.
	LiveIndexEvery time.Duration
	// Catalog is the shared catalog (package catalog: a postgres:// URL,
	// or a bbolt file's path) this archive follows as one node of several;
	// it is remembered, so later writable opens follow it without it.
	// Read-only opens never contact it.
	Catalog string
}

// Archive is an open archive: catalog, shards, search index and codecs.
type Archive struct {
	dir    string
	opts   Options
	a      *archive.Archive
	log    *slog.Logger
	codecs []formats.Codec

	// syncMu serialises opening, bringing up to date and rebuilding the
	// index. A search does not take it: it would wait for a whole sync
	// (a second after a 1 GB upload's commit).
	syncMu sync.Mutex
	// ixMu guards ix, which is set and cleared under syncMu too, and
	// indexedAt.
	ixMu sync.RWMutex
	ix   *query.Index
	lock *lockFile
	// shared is the catalog shared with other nodes (shared.go), or nil.
	shared *shared
	// live schedules the index syncs of live grows (livesync.go).
	live liveSync
	// indexedAt is when the last index sync began.
	indexedAt time.Time
	// shareMu serialises changes to the shared links' state (shares.go).
	shareMu sync.Mutex
	// players keeps recent player summaries (players.go).
	players playerCache
}

// Open opens the archive in dir.
func Open(dir string, opts Options) (*Archive, error) {
	if strings.TrimSpace(dir) == "" {
		return nil, fmt.Errorf("archive directory: empty path: %w", ErrNoArchive)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if !opts.Create || opts.ReadOnly {
		if _, err := os.Stat(filepath.Join(dir, "catalog.db")); errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w", dir, ErrNoArchive)
		}
	}
	ao := opts.Archive
	ao.ReadOnly = opts.ReadOnly
	if opts.Wait > 0 {
		ao.LockTimeout = opts.Wait
	}
	codecs := all.Codecs()
	if ao.Columns == nil {
		ao.Columns = columnTransforms(codecs)
	}
	a, err := archive.Open(dir, ao)
	if errors.Is(err, archive.ErrInUse) {
		return nil, lockedError(dir)
	}
	if err != nil {
		return nil, err
	}
	if opts.Index.Pace == nil {
		// The index's updates give way to a server's requests as an
		// ingest's parse and compression do.
		opts.Index.Pace = a.Background
	}
	x := &Archive{dir: dir, opts: opts, a: a, log: opts.Logger, codecs: codecs}
	if sp := a.SpoolsRemovedAtOpen(); sp.Count > 0 {
		x.log.Info("removed upload spools a killed process left", "spools", sp.Count, "bytes", sp.Bytes)
	}
	if !opts.ReadOnly {
		x.lock = writeLockFile(dir, opts.Command)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := x.attachCatalog(ctx, opts.Catalog)
		cancel()
		if err != nil {
			return nil, errors.Join(fmt.Errorf("shared catalog: %w", err), x.Close())
		}
	}
	return x, nil
}

// columnTransforms returns, by format name, the codecs that implement
// formats.Columnar: the archive stores their chunks as column streams.
func columnTransforms(codecs []formats.Codec) map[string]formats.Columnar {
	m := make(map[string]formats.Columnar)
	for _, c := range codecs {
		if col, ok := c.(formats.Columnar); ok {
			m[c.Name()] = col
		}
	}
	return m
}

// Close closes the index and the archive.
func (x *Archive) Close() error {
	x.stopLiveSync()
	var errs []error
	x.syncMu.Lock()
	if ix := x.takeIndex(); ix != nil {
		errs = append(errs, ix.Close())
	}
	x.syncMu.Unlock()
	if x.shared != nil {
		// Queued audit entries go to the catalog first, unless it is away.
		close(x.shared.audit)
		select {
		case <-x.shared.auditDone:
		case <-time.After(10 * time.Second):
			x.log.Warn("shared catalog: closing with audit entries not sent (they are in this node's audit log)")
		}
		errs = append(errs, x.shared.cat.Close())
	}
	x.lock.remove()
	errs = append(errs, x.a.Close())
	return errors.Join(errs...)
}

// Interactive marks work a person waits on (a server's request) until
// end is called, and returns the context to do it under: meanwhile
// ingests and index updates give way to it (archive.Archive.Interactive).
func (x *Archive) Interactive(ctx context.Context) (context.Context, func()) {
	return x.a.Interactive(ctx)
}

// InteractiveLater is Interactive for work a person waits on from begin
// on: a request whose body is still arriving
// (archive.Archive.InteractiveLater).
func (x *Archive) InteractiveLater(ctx context.Context) (_ context.Context, begin, end func()) {
	return x.a.InteractiveLater(ctx)
}

// InteractiveNow returns how many marks of interactive work are under way.
func (x *Archive) InteractiveNow() int64 { return x.a.InteractiveNow() }

// Dir returns the archive's directory.
func (x *Archive) Dir() string { return x.dir }

// Codec returns the codec for format name, or nil when this build has none.
func (x *Archive) Codec(name string) formats.Codec {
	for _, c := range x.codecs {
		if c.Name() == name {
			return c
		}
	}
	return nil
}

// Formats lists the format names this build reads, in detection order.
func (x *Archive) Formats() []string { return all.Names() }

// CheckFormats returns an error listing the known formats when any name in
// names is not one of them.
func CheckFormats(names []string) error {
	known := all.Names()
	for _, n := range names {
		found := false
		for _, k := range known {
			found = found || k == n
		}
		if !found {
			return fmt.Errorf("unknown format %q (known: %s)", n, strings.Join(known, ", "))
		}
	}
	return nil
}

// Resolve turns a full recording id or a unique prefix into an id.
func (x *Archive) Resolve(ref string) (uuid.UUID, error) { return x.a.Resolve(ref) }

// Manifest returns the manifest of the recording that ref names.
func (x *Archive) Manifest(ref string) (*archive.Manifest, error) {
	id, err := x.a.Resolve(ref)
	if err != nil {
		return nil, err
	}
	return x.a.Manifest(id)
}

// Live returns the state of the live recording that ref names: how much
// of its file it holds. Its error wraps archive.ErrSealed for a recording
// that no longer grows.
func (x *Archive) Live(ref string) (*archive.Live, error) {
	id, err := x.a.Resolve(ref)
	if err != nil {
		return nil, err
	}
	return x.a.LiveOf(id)
}

// List calls fn with every manifest, in id order.
func (x *Archive) List(ctx context.Context, fn func(*archive.Manifest) error) error {
	return x.a.List(ctx, fn)
}

// Events returns the searchable events stored for the recording.
func (x *Archive) Events(id uuid.UUID) ([]formats.Event, error) { return x.a.Events(id) }

// Stats totals the archive's recordings and the bytes its files take.
func (x *Archive) Stats(ctx context.Context) (*archive.Stats, error) { return x.a.Stats(ctx) }

// SpoolsRemovedAtOpen says which upload spools a killed process left that
// Open removed (a writable Open), so that a repair counts them as repaired.
func (x *Archive) SpoolsRemovedAtOpen() archive.Spools { return x.a.SpoolsRemovedAtOpen() }

// Check verifies the archive; with Repair it removes what a crash left.
func (x *Archive) Check(ctx context.Context, opts archive.CheckOptions) (*archive.CheckReport, error) {
	if opts.Repair && x.opts.ReadOnly {
		return nil, ErrReadOnly
	}
	if opts.Repair {
		release, err := x.janitor(ctx)
		if err != nil {
			return nil, err
		}
		defer release()
	}
	rep, err := x.a.Check(ctx, opts)
	if err != nil || !opts.Repair {
		return rep, err
	}
	return rep, x.sync(ctx)
}

// index returns the search index, opening it on first use. A writer brings
// it up to date with the catalog first (rebuilding a stale index); a
// read-only archive reads it as the writer left it.
func (x *Archive) index(ctx context.Context) (*query.Index, error) {
	x.ixMu.RLock()
	ix := x.ix
	x.ixMu.RUnlock()
	if ix != nil {
		return ix, nil
	}
	x.syncMu.Lock()
	defer x.syncMu.Unlock()
	return x.openIndex(ctx)
}

// setIndex makes ix the open index.
func (x *Archive) setIndex(ix *query.Index) {
	x.ixMu.Lock()
	x.ix = ix
	x.ixMu.Unlock()
}

// takeIndex returns the open index, if any, and forgets it, for the
// caller (holding syncMu) to close.
func (x *Archive) takeIndex() *query.Index {
	x.ixMu.Lock()
	defer x.ixMu.Unlock()
	ix := x.ix
	x.ix = nil
	return ix
}

// openIndex opens the index (brought up to date, or rebuilt when stale)
// unless it is open; the caller holds syncMu.
func (x *Archive) openIndex(ctx context.Context) (*query.Index, error) {
	if x.ix != nil {
		return x.ix, nil
	}
	dir := filepath.Join(x.dir, "index")
	if x.opts.ReadOnly {
		ix, err := query.OpenWith(dir, query.Options{ReadOnly: true, MaxEvents: x.opts.Index.MaxEvents})
		if errors.Is(err, query.ErrStale) || errors.Is(err, query.ErrOldLayout) {
			// Only a writer rebuilds it (Reindex, or a writer's Open).
			return nil, fmt.Errorf("search index: %w", err)
		}
		if err != nil {
			return nil, fmt.Errorf("search index: %w", err)
		}
		x.setIndex(ix)
		return ix, nil
	}
	ix, err := query.OpenWith(dir, x.opts.Index)
	if err == nil {
		if _, err = query.Sync(ctx, ix, x.a); err != nil {
			ix.Close()
		}
	}
	if errors.Is(err, query.ErrStale) || errors.Is(err, query.ErrOldLayout) {
		x.log.Warn("rebuilding the search index", "reason", err)
		ix, _, err = query.Rebuild(ctx, dir, x.a, x.opts.Index)
	}
	if err != nil {
		return nil, fmt.Errorf("search index: %w", err)
	}
	x.setIndex(ix)
	return ix, nil
}

// sync brings the search index up to date after a catalog change. Every
// change method ends with it: this is the one place the rule lives.
func (x *Archive) sync(ctx context.Context) error {
	x.syncMu.Lock()
	defer x.syncMu.Unlock()
	ix, err := x.openIndex(ctx)
	if err != nil {
		return err
	}
	began := time.Now()
	if _, err := query.Sync(ctx, ix, x.a); err != nil {
		return fmt.Errorf("%w: %w", ErrIndexSync, err)
	}
	x.ixMu.Lock()
	x.indexedAt = began
	x.ixMu.Unlock()
	return nil
}

// Reindex throws the search index away and builds it again from the
// catalog. It returns the number of recordings indexed.
func (x *Archive) Reindex(ctx context.Context) (int, error) {
	if x.opts.ReadOnly {
		return 0, ErrReadOnly
	}
	x.syncMu.Lock()
	defer x.syncMu.Unlock()
	if ix := x.takeIndex(); ix != nil {
		ix.Close()
	}
	ix, n, err := query.Rebuild(ctx, filepath.Join(x.dir, "index"), x.a, x.opts.Index)
	if err != nil {
		return 0, err
	}
	x.setIndex(ix)
	return n, nil
}

// lockFile says which process has the archive open for writing.
type lockFile struct {
	path string
}

// lockInfo is what the lock file holds.
type lockInfo struct {
	PID     int       `json:"pid"`
	Command string    `json:"command,omitempty"`
	Since   time.Time `json:"since"`
}

const lockFileName = "owner.json"

// writeLockFile records this process as the archive's writer. bbolt's file
// lock is what excludes others; this file only names the holder.
func writeLockFile(dir, command string) *lockFile {
	path := filepath.Join(dir, lockFileName)
	b, _ := json.Marshal(lockInfo{PID: os.Getpid(), Command: command, Since: time.Now().UTC()})
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return nil // naming the holder is a courtesy; the lock still holds
	}
	return &lockFile{path: path}
}

func (l *lockFile) remove() {
	if l != nil {
		os.Remove(l.path)
	}
}

// lockedError names the process holding dir, where it said who it is.
func lockedError(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, lockFileName))
	var li lockInfo
	if err != nil || json.Unmarshal(b, &li) != nil || li.PID == 0 {
		return fmt.Errorf("%s: %w", dir, ErrLocked)
	}
	cmd := li.Command
	if cmd == "" {
		cmd = "archivectl"
	}
	return fmt.Errorf("%s: %w: pid %d (%s) since %s",
		dir, ErrLocked, li.PID, cmd, li.Since.Local().Format(time.DateTime))
}
