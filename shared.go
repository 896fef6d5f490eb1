// A node among several: with a shared catalog (package catalog, PostgreSQL
// for several machines), the moderators' marks, tokens, settings and audit
// log are made there first and applied here from its change feed, as every
// other node applies them; this archive's own catalog is then a cache of
// the shared state and of the bucket.

package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	neturl "net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/catalog"
)

// ErrJanitorElsewhere is returned by the work that deletes what every node
// shares (prune, repair) on a node of a shared catalog while another node
// holds the janitor's lease: one node at a time sweeps.
var ErrJanitorElsewhere = errors.New("another node is the janitor now (it holds the shared catalog's lease): prune and repair run there")

// janitorLease is the lease's name, and janitorTTL how long it holds
// without renewal: a janitor that dies is replaced within it.
const (
	janitorLease = "janitor"
	janitorTTL   = 2 * time.Minute
)

// followPoll is how often a follower asks the catalog for changes when no
// notification woke it (a wake-up can be lost while reconnecting).
const followPoll = 2 * time.Second

// shared is an archive's handle on the catalog it shares with other nodes.
type shared struct {
	cat  catalog.Catalog
	node string
	// mu serialises applying the feed, so a change is applied once.
	mu sync.Mutex
	// busy counts this node's changes between their publish and their
	// local commit: the follower stops at this node's own changes while
	// any is, so it neither applies one twice nor records it as applied
	// before it is (a node killed in between applies it at its next start).
	busy atomic.Int32
	// audit queues this node's audit entries for the catalog (sendAudit),
	// auditDone closes when they are sent.
	audit     chan archive.AuditEntry
	auditDone chan struct{}
}

// Shared values, as the catalog stores them (JSON).
type (
	sharedFlag struct {
		Note  string             `json:"note,omitempty"`
		Range *archive.TickRange `json:"range,omitempty"`
	}
	sharedHold struct {
		Reason string `json:"reason"`
	}
	sharedManifest struct{}
)

// Shared settings' keys.
const (
	settingPolicy = "policy"
	settingRemote = "remote"
)

func flagKey(id uuid.UUID, name string) string { return id.String() + "/" + name }

// attachCatalog opens the shared catalog this archive follows (url, or the
// one it followed before when url is empty), gives it what this archive
// held before it first followed it, and applies its changes.
func (x *Archive) attachCatalog(ctx context.Context, url string) error {
	if url == "" {
		var err error
		if url, err = x.a.CatalogURL(); err != nil || url == "" {
			return err
		}
	} else if err := x.a.SetCatalogURL(withoutPassword(url)); err != nil {
		return err
	}
	cat, err := catalog.Open(ctx, url)
	if err != nil {
		return err
	}
	node, err := x.a.Node()
	if err != nil {
		cat.Close()
		return err
	}
	x.shared = &shared{cat: cat, node: node, audit: make(chan archive.AuditEntry, auditQueue), auditDone: make(chan struct{})}
	go x.sendAudit(x.shared)
	if _, ok, err := x.a.CatalogSeq(); err != nil {
		return err
	} else if !ok {
		if err := x.seedCatalog(ctx); err != nil {
			return err
		}
	}
	_, err = x.applyCatalog(ctx, true)
	return err
}

// change brackets one of this node's changes to the shared state: call it
// before the publish, and the function it returns after the local commit.
func (x *Archive) change() (done func()) {
	if x.shared == nil {
		return func() {}
	}
	x.shared.busy.Add(1)
	return func() { x.shared.busy.Add(-1) }
}

// seedCatalog gives the shared catalog what this archive held before it
// first followed one: moderators' flags, holds and cases, takedowns, tokens and
// the retention policy, each only where the catalog has no entry (what
// other nodes decided wins).
func (x *Archive) seedCatalog(ctx context.Context) error {
	sh := x.shared
	create := func(kind catalog.Kind, key string, v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if _, err := sh.cat.Create(ctx, kind, key, b, sh.node); err != nil && !errors.Is(err, catalog.ErrExists) {
			return err
		}
		return nil
	}
	err := x.a.List(ctx, func(m *archive.Manifest) error {
		for _, f := range m.Flags {
			if err := create(catalog.KindFlag, flagKey(m.ID, f.Name), sharedFlag{Note: f.Note, Range: f.Range}); err != nil {
				return err
			}
		}
		if m.Hold != nil {
			return create(catalog.KindHold, m.ID.String(), sharedHold{Reason: m.Hold.Reason})
		}
		return nil
	})
	if err == nil {
		err = x.seedCases(create)
	}
	if err == nil {
		err = x.seedShares(create)
	}
	if err == nil {
		err = x.seedMaps(ctx)
	}
	if err != nil {
		return fmt.Errorf("shared catalog: give it this archive's marks: %w", err)
	}
	ts, err := x.a.Takedowns()
	if err != nil {
		return err
	}
	for _, t := range ts {
		if err := create(catalog.KindTakedown, t.SHA256, t); err != nil {
			return err
		}
	}
	toks, err := x.a.Tokens()
	if err != nil {
		return err
	}
	for _, t := range toks {
		if err := create(catalog.KindToken, t.Name, t); err != nil {
			return err
		}
	}
	if p, err := x.a.Policy(); err != nil {
		return err
	} else if p != nil {
		if err := create(catalog.KindSetting, settingPolicy, p); err != nil {
			return err
		}
	}
	if rc, err := x.a.RemoteConfig(); err != nil {
		return err
	} else if rc != nil && !rc.S3.ReadOnly {
		if err := create(catalog.KindSetting, settingRemote, rc); err != nil {
			return err
		}
	}
	return x.a.SetCatalogSeq(0)
}

// publish puts v under kind and key in the shared catalog, when there is
// one: the change every node (this one too) then applies.
func (x *Archive) publish(ctx context.Context, kind catalog.Kind, key string, v any) error {
	if x.shared == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if _, err := x.shared.cat.Put(ctx, kind, key, b, x.shared.node); err != nil {
		return fmt.Errorf("shared catalog: %w (nothing changed)", err)
	}
	return nil
}

// unpublish deletes kind and key from the shared catalog, when there is one.
func (x *Archive) unpublish(ctx context.Context, kind catalog.Kind, key string) error {
	if x.shared == nil {
		return nil
	}
	if _, _, err := x.shared.cat.Delete(ctx, kind, key, x.shared.node); err != nil {
		return fmt.Errorf("shared catalog: %w (nothing changed)", err)
	}
	return nil
}

// auditQueue bounds the audit entries waiting for the shared catalog.
const auditQueue = 4096

// publishAudit queues audit entries for the shared catalog (best effort:
// the change they record has taken effect, and this archive's own audit
// log has them). It never waits: an ingest goes on while PostgreSQL is
// away; entries past a full queue are left out of the shared log and said
// so in this node's log.
func (x *Archive) publishAudit(entries []archive.AuditEntry) {
	if x.shared == nil {
		return
	}
	for _, e := range entries {
		select {
		case x.shared.audit <- e:
		default:
			x.log.Warn("shared catalog: audit queue full, an entry stays in this node's audit log only",
				"action", e.Action, "recording", e.Recording)
		}
	}
}

// sendAudit puts queued audit entries into the shared catalog until the
// queue closes (Close), retrying each for a while when the catalog fails.
func (x *Archive) sendAudit(sh *shared) {
	defer close(sh.auditDone)
	for e := range sh.audit {
		e.Node = sh.node
		b, err := json.Marshal(e)
		if err != nil {
			continue
		}
		key := sh.node + "/" + uuid.NewString()
		for try := 0; ; try++ {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, err = sh.cat.Put(ctx, catalog.KindAudit, key, b, sh.node)
			cancel()
			if err == nil || errors.Is(err, catalog.ErrClosed) || try == 5 {
				break
			}
			time.Sleep(time.Duration(1<<try) * time.Second)
		}
		if err != nil {
			x.log.Error("shared catalog: audit log", "err", err)
		}
	}
}

// janitor takes the shared catalog's janitor lease for the work that
// deletes, and returns its release; alone, there is nothing to take.
func (x *Archive) janitor(ctx context.Context) (release func(), err error) {
	if x.shared == nil {
		return func() {}, nil
	}
	sh := x.shared
	held, err := sh.cat.Lease(ctx, janitorLease, sh.node, janitorTTL)
	if err != nil {
		return nil, fmt.Errorf("shared catalog: janitor lease: %w", err)
	}
	if !held {
		return nil, ErrJanitorElsewhere
	}
	// Renewed while the work runs, given up after.
	rctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(janitorTTL / 4)
		defer t.Stop()
		for {
			select {
			case <-rctx.Done():
				return
			case <-t.C:
				if _, err := sh.cat.Lease(rctx, janitorLease, sh.node, janitorTTL); err != nil && rctx.Err() == nil {
					x.log.Warn("shared catalog: renew the janitor lease", "err", err)
				}
			}
		}
	}()
	return func() {
		stop()
		<-done
		uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := sh.cat.Unlease(uctx, janitorLease, sh.node); err != nil {
			x.log.Warn("shared catalog: give up the janitor lease", "err", err)
		}
	}, nil
}

// FollowCatalog applies the shared catalog's changes as they come (woken
// by its notifications, else every two seconds) until ctx ends: flags,
// holds, takedowns, tokens and settings other nodes made are in force here
// within seconds, and another node's upload is caught up at once. Without
// a shared catalog it returns at once.
func (x *Archive) FollowCatalog(ctx context.Context) error {
	if x.shared == nil {
		return nil
	}
	wake, err := x.shared.cat.Watch(ctx)
	if err != nil {
		return err
	}
	t := time.NewTicker(followPoll)
	defer t.Stop()
	for {
		// First what came between the open and the watch.
		if _, err := x.applyCatalog(ctx, false); err != nil && ctx.Err() == nil {
			x.log.Warn("shared catalog: apply changes", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-wake:
			if !ok {
				wake = nil // the catalog closed: poll until ctx ends
			}
		case <-t.C:
		}
	}
}

// applyCatalog applies the catalog's changes since the last one applied
// here, and returns how many it applied. This node's own changes it applies
// only at open (own): later, each was committed here when it was made.
func (x *Archive) applyCatalog(ctx context.Context, own bool) (int, error) {
	sh := x.shared
	sh.mu.Lock()
	defer sh.mu.Unlock()
	seq, _, err := x.a.CatalogSeq()
	if err != nil {
		return 0, err
	}
	applied, uploads := 0, false
	var errs []error
	for {
		es, err := sh.cat.Since(ctx, seq, 256)
		if err != nil {
			return applied, err
		}
		if len(es) == 0 {
			break
		}
		stop := false
		for _, e := range es {
			mine := e.Node == sh.node
			if mine && !own && sh.busy.Load() > 0 {
				stop = true // its local commit may be still to come
				break
			}
			if e.Kind == catalog.KindManifest && !mine {
				uploads = true
			}
			if !mine || own {
				if err := x.applyEntry(ctx, e); err != nil {
					errs = append(errs, fmt.Errorf("%s %s (change %d): %w", e.Kind, e.Key, e.Seq, err))
				}
				applied++
			}
			seq = e.Seq
		}
		if err := x.a.SetCatalogSeq(seq); err != nil {
			return applied, err
		}
		if stop {
			break
		}
	}
	if uploads {
		if rc, err := x.a.RemoteConfig(); err == nil && rc != nil {
			_, err := x.CatchUp(ctx)
			errs = append(errs, err)
		}
	}
	if applied > 0 {
		errs = append(errs, x.sync(ctx))
	}
	return applied, errors.Join(errs...)
}

// applyEntry makes this archive agree with one change of the catalog. Each
// is idempotent: applying a change twice (a node killed between applying
// and recording it) changes nothing more.
func (x *Archive) applyEntry(ctx context.Context, e catalog.Entry) error {
	switch e.Kind {
	case catalog.KindFlag:
		id, name, ok := strings.Cut(e.Key, "/")
		rid, err := uuid.Parse(id)
		if !ok || err != nil {
			return fmt.Errorf("not a flag key")
		}
		var f *sharedFlag
		if !e.Deleted {
			f = new(sharedFlag)
			if err := json.Unmarshal(e.Value, f); err != nil {
				return err
			}
		}
		return x.applyFlag(rid, name, f)
	case catalog.KindHold:
		rid, err := uuid.Parse(e.Key)
		if err != nil {
			return fmt.Errorf("not a hold key")
		}
		var h *sharedHold
		if !e.Deleted {
			h = new(sharedHold)
			if err := json.Unmarshal(e.Value, h); err != nil {
				return err
			}
		}
		return x.applyHold(rid, h)
	case catalog.KindTakedown:
		if e.Deleted {
			_, err := x.a.LiftTakedown(ctx, e.Key)
			if errors.Is(err, archive.ErrNoTakedown) {
				return nil
			}
			if errors.Is(err, archive.ErrTakedownPending) {
				// Undone on its node: restore what this node kept.
				id, ferr := x.findTakedown(e.Key)
				if ferr != nil {
					return ferr
				}
				_, _, err = x.a.UndoTakedown(ctx, id.ID)
			}
			return err
		}
		t := new(archive.Takedown)
		if err := json.Unmarshal(e.Value, t); err != nil {
			return err
		}
		_, _, err := x.a.RecordTakedowns(ctx, []*archive.Takedown{t})
		return err
	case catalog.KindToken:
		if e.Deleted {
			if err := x.a.DeleteToken(e.Key); err != nil && !errors.Is(err, archive.ErrNoToken) {
				return err
			}
			return nil
		}
		t := new(archive.Token)
		if err := json.Unmarshal(e.Value, t); err != nil {
			return err
		}
		if err := x.a.PutToken(*t); err != nil && !errors.Is(err, archive.ErrTokenExists) {
			return err
		}
		return nil
	case catalog.KindSetting:
		return x.applySetting(ctx, e)
	case kindCase, kindCaseNote:
		return x.applyCase(e)
	case kindShare:
		return x.applyShareEntry(e)
	case kindMap:
		return x.applyMap(e)
	case catalog.KindAudit:
		if e.Node == x.shared.node || e.Deleted {
			return nil
		}
		var a archive.AuditEntry
		if err := json.Unmarshal(e.Value, &a); err != nil {
			return err
		}
		a.Seq, a.Node = 0, e.Node
		return x.a.AppendAudit(a)
	}
	return nil // manifests (applyCatalog catches up) and kinds of newer builds
}

// applyFlag sets the moderator's flag name on recording id to f, or
// removes it (f nil). A recording this node does not hold (yet) is left:
// applyMarks gives it its marks when a catch-up brings it.
func (x *Archive) applyFlag(id uuid.UUID, name string, f *sharedFlag) error {
	m, err := x.a.Manifest(id)
	if errors.Is(err, archive.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, have := range m.Flags {
		if have.Name == name {
			if f != nil && have.Note == f.Note && sameRange(have.Range, f.Range) {
				return nil
			}
			if f == nil {
				_, err = x.a.Unflag(id, name)
				return err
			}
		}
	}
	if f == nil {
		return nil
	}
	_, err = x.a.SetFlagAt(id, name, f.Note, f.Range)
	return err
}

// sameRange reports whether two flags' ranges are the same (nil: the
// whole recording).
func sameRange(a, b *archive.TickRange) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// applyHold sets the hold of recording id to h, or releases it (h nil).
func (x *Archive) applyHold(id uuid.UUID, h *sharedHold) error {
	m, err := x.a.Manifest(id)
	if errors.Is(err, archive.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	switch {
	case h == nil && m.Hold != nil:
		_, err = x.a.Release(id)
	case h != nil && (m.Hold == nil || m.Hold.Reason != h.Reason):
		_, err = x.a.SetHold(id, h.Reason)
	}
	return err
}

// applyMarks gives recordings a catch-up just added the flags and hold the
// shared catalog holds for them, and only those: their bucket manifests
// carry the marks of their upload, which may have changed since. It reads
// the catalog's marks once (moderators' marks are few beside recordings),
// and touches only recordings whose manifest or catalog has a mark.
func (x *Archive) applyMarks(ctx context.Context, ids []uuid.UUID) error {
	if len(ids) == 0 {
		return nil
	}
	flags, err := x.shared.cat.List(ctx, catalog.KindFlag, "")
	if err != nil {
		return err
	}
	holds, err := x.shared.cat.List(ctx, catalog.KindHold, "")
	if err != nil {
		return err
	}
	var errs []error
	wantFlags := map[uuid.UUID]map[string]*sharedFlag{}
	for _, e := range flags {
		id, name, _ := strings.Cut(e.Key, "/")
		rid, err := uuid.Parse(id)
		f := new(sharedFlag)
		if err == nil {
			err = json.Unmarshal(e.Value, f)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("flag %s: %w", e.Key, err))
			continue
		}
		if wantFlags[rid] == nil {
			wantFlags[rid] = map[string]*sharedFlag{}
		}
		wantFlags[rid][name] = f
	}
	wantHold := map[uuid.UUID]*sharedHold{}
	for _, e := range holds {
		rid, err := uuid.Parse(e.Key)
		h := new(sharedHold)
		if err == nil {
			err = json.Unmarshal(e.Value, h)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("hold %s: %w", e.Key, err))
			continue
		}
		wantHold[rid] = h
	}
	for _, id := range ids {
		m, err := x.a.Manifest(id)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		want := wantFlags[id]
		for _, f := range m.Flags {
			if want[f.Name] == nil {
				errs = append(errs, x.applyFlag(id, f.Name, nil))
			}
		}
		for name, f := range want {
			errs = append(errs, x.applyFlag(id, name, f))
		}
		if m.Hold != nil || wantHold[id] != nil {
			errs = append(errs, x.applyHold(id, wantHold[id]))
		}
	}
	return errors.Join(errs...)
}

// applySetting applies a shared setting: the retention policy always, the
// remote configuration only to a node that has none (a node started on an
// empty disk against the catalog finds its bucket).
func (x *Archive) applySetting(ctx context.Context, e catalog.Entry) error {
	switch e.Key {
	case settingPolicy:
		if e.Deleted {
			return x.a.SetPolicy(nil)
		}
		p := new(archive.Policy)
		if err := json.Unmarshal(e.Value, p); err != nil {
			return err
		}
		return x.a.SetPolicy(p)
	case settingShares:
		return x.applyShareEntry(e)
	case settingRemote:
		if e.Deleted {
			return nil
		}
		if rc, err := x.a.RemoteConfig(); err != nil || rc != nil {
			return err
		}
		rc := new(archive.RemoteConfig)
		if err := json.Unmarshal(e.Value, rc); err != nil {
			return err
		}
		return x.a.SetRemote(ctx, *rc)
	}
	return nil
}

// publishUploads tells the other nodes of recordings this node uploaded, so
// they catch up at once rather than at their next tier pass.
func (x *Archive) publishUploads(ctx context.Context, ids []uuid.UUID) error {
	for _, id := range ids {
		if err := x.publish(ctx, catalog.KindManifest, id.String(), sharedManifest{}); err != nil {
			return err
		}
	}
	return nil
}

// now is the archive's clock (archive.Options.Now; tests set it).
func (x *Archive) now() time.Time {
	if x.opts.Archive.Now != nil {
		return x.opts.Archive.Now().UTC()
	}
	return time.Now().UTC()
}

// withoutPassword is a catalog URL as the archive remembers it: a password
// in it would be read by anyone who may read catalog.db (later opens take
// it from PGPASSWORD or ~/.pgpass, as PostgreSQL's clients do).
func withoutPassword(s string) string {
	u, err := neturl.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	if _, set := u.User.Password(); !set {
		return s
	}
	u.User = neturl.User(u.User.Username())
	return u.String()
}
