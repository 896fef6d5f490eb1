package catalog

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Advisory lock keys ("replay" and a number), held for one transaction.
const (
	// schemaLockKey serializes the schema's creation: CREATE TABLE IF NOT
	// EXISTS run by two nodes at once can fail on the system catalogs'
	// unique indexes.
	schemaLockKey int64 = 0x7265706c61790001
	// writeLockKey serializes the catalog's writes; see pgCatalog.write.
	writeLockKey int64 = 0x7265706c61790002
)

// schemaVersion is the version of the tables below; a database that says a
// later one was written by a newer build, which this one refuses.
const schemaVersion = 1

// schemaSQL makes the tables. Kinds and keys use the "C" collation, byte
// order, so that List's key order and prefix ranges match bbolt's.
const schemaSQL = `
CREATE TABLE IF NOT EXISTS replay_catalog_schema (
	id int PRIMARY KEY CHECK (id = 1),
	version int NOT NULL
);
CREATE TABLE IF NOT EXISTS replay_catalog_entries (
	kind text COLLATE "C" NOT NULL,
	key text COLLATE "C" NOT NULL,
	value bytea NOT NULL,
	seq bigint NOT NULL,
	node text NOT NULL,
	at timestamptz NOT NULL,
	PRIMARY KEY (kind, key)
);
CREATE TABLE IF NOT EXISTS replay_catalog_feed (
	seq bigserial PRIMARY KEY,
	kind text COLLATE "C" NOT NULL,
	key text COLLATE "C" NOT NULL,
	value bytea,
	deleted bool NOT NULL,
	node text NOT NULL,
	at timestamptz NOT NULL
);
CREATE TABLE IF NOT EXISTS replay_catalog_leases (
	name text PRIMARY KEY,
	holder text NOT NULL,
	until timestamptz NOT NULL
);
`

// notifyChannel is the LISTEN/NOTIFY channel of committed changes; the
// payload is the change's sequence number.
const notifyChannel = "replay_catalog"

// The statements of the writes. Each ends in pg_notify, which PostgreSQL
// delivers when (and only if) the transaction commits. The feed's seq
// column is a bigserial, whose sequence PostgreSQL names
// replay_catalog_feed_seq_seq.
const (
	sqlPut = `
WITH f AS (
	INSERT INTO replay_catalog_feed (kind, key, value, deleted, node, at)
	VALUES ($1, $2, $3, false, $4, clock_timestamp())
	RETURNING seq, at
), e AS (
	INSERT INTO replay_catalog_entries (kind, key, value, seq, node, at)
	SELECT $1, $2, $3, seq, $4, at FROM f
	ON CONFLICT (kind, key) DO UPDATE
	SET value = excluded.value, seq = excluded.seq, node = excluded.node, at = excluded.at
)
SELECT seq, at, pg_notify('replay_catalog', seq::text) FROM f`
	// sqlCreate inserts the entry only when its key is free (the primary
	// key decides between racing creators) and records the change only
	// then; no row means the entry exists.
	sqlCreate = `
WITH e AS (
	INSERT INTO replay_catalog_entries (kind, key, value, seq, node, at)
	VALUES ($1, $2, $3, nextval('replay_catalog_feed_seq_seq'), $4, clock_timestamp())
	ON CONFLICT (kind, key) DO NOTHING
	RETURNING seq, at
), f AS (
	INSERT INTO replay_catalog_feed (seq, kind, key, value, deleted, node, at)
	SELECT seq, $1, $2, $3, false, $4, at FROM e
	RETURNING seq, at
)
SELECT seq, at, pg_notify('replay_catalog', seq::text) FROM f`
	// sqlDelete records a deletion only when there was an entry.
	sqlDelete = `
WITH d AS (
	DELETE FROM replay_catalog_entries WHERE kind = $1 AND key = $2
	RETURNING kind, key
), f AS (
	INSERT INTO replay_catalog_feed (kind, key, value, deleted, node, at)
	SELECT kind, key, NULL, true, $3, clock_timestamp() FROM d
	RETURNING seq, at
)
SELECT seq, at, pg_notify('replay_catalog', seq::text) FROM f`
	sqlGet = `SELECT seq, value, node, at FROM replay_catalog_entries WHERE kind = $1 AND key = $2`
	// sqlSince takes a page of limit ($2) changes and keeps those that
	// start before maxBatchBytes ($3) of values, so at least one.
	sqlSince = `
SELECT seq, kind, key, value, deleted, node, at FROM (
	SELECT page.*, sum(coalesce(octet_length(value), 0)) OVER (ORDER BY seq) - coalesce(octet_length(value), 0) AS before
	FROM (SELECT * FROM replay_catalog_feed WHERE seq > $1 ORDER BY seq LIMIT $2) AS page
) AS sized
WHERE before < $3
ORDER BY seq`
	// sqlLease takes a free or expired lease or renews the holder's, on the
	// database's clock (now()), so the nodes' clocks do not matter.
	sqlLease = `
INSERT INTO replay_catalog_leases AS l (name, holder, until)
VALUES ($1, $2, now() + $3::float8 * interval '1 second')
ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, until = excluded.until
WHERE l.holder = excluded.holder OR l.until < now()
RETURNING holder`
	sqlUnlease = `DELETE FROM replay_catalog_leases WHERE name = $1 AND holder = $2`
)

// The listener's re-connection backoff.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// pgCatalog is the Catalog of several nodes, in a PostgreSQL database; each
// node opens its own.
type pgCatalog struct {
	pool    *pgxpool.Pool
	secrets []string // the URL's password, never to appear in an error
	closed  atomic.Bool

	mu       sync.Mutex // orders Watch's Add with Close's Wait
	done     context.Context
	stop     context.CancelFunc
	watchers sync.WaitGroup
}

// openPostgres connects to the database at url and makes the schema.
func openPostgres(ctx context.Context, url string) (*pgCatalog, error) {
	where, secrets := redactURL(url)
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, scrub(fmt.Errorf("catalog: open %s: %w", where, err), secrets)
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		cfg.ConnConfig.RuntimeParams["application_name"] = "replay-catalog"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, scrub(fmt.Errorf("catalog: open %s: %w", where, err), secrets)
	}
	if err := makeSchema(ctx, pool); err != nil {
		pool.Close()
		return nil, scrub(fmt.Errorf("catalog: open %s: %w", where, err), secrets)
	}
	done, stop := context.WithCancel(context.Background())
	return &pgCatalog{pool: pool, secrets: secrets, done: done, stop: stop}, nil
}

// makeSchema creates the tables if they are missing and refuses a schema
// of a newer build.
func makeSchema(ctx context.Context, pool *pgxpool.Pool) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", schemaLockKey); err != nil {
			return fmt.Errorf("schema lock: %w", err)
		}
		if _, err := tx.Exec(ctx, schemaSQL); err != nil {
			return fmt.Errorf("schema: %w", err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO replay_catalog_schema (id, version) VALUES (1, $1) ON CONFLICT (id) DO NOTHING`, schemaVersion); err != nil {
			return fmt.Errorf("schema version: %w", err)
		}
		var v int
		if err := tx.QueryRow(ctx, "SELECT version FROM replay_catalog_schema").Scan(&v); err != nil {
			return fmt.Errorf("schema version: %w", err)
		}
		if v > schemaVersion {
			return fmt.Errorf("schema version %d was written by a newer build (this one knows %d)", v, schemaVersion)
		}
		return nil
	})
}

// begin refuses an operation on a closed catalog or with an ended context.
func (c *pgCatalog) begin(ctx context.Context) error {
	if c.closed.Load() {
		return ErrClosed
	}
	return ctx.Err()
}

// fail wraps err with the operation; any error after Close becomes
// ErrClosed, and the URL's password is scrubbed from the message.
func (c *pgCatalog) fail(op string, err error) error {
	if errors.Is(err, ErrClosed) || c.closed.Load() {
		return fmt.Errorf("%w: %s", ErrClosed, op)
	}
	return scrub(fmt.Errorf("catalog: %s: %w", op, err), c.secrets)
}

// write runs fn in a transaction that first takes the write lock.
//
// The lock is what makes Since exact. A follower reads the changes with
// seq > the last it applied; seq comes from a sequence, which hands out
// numbers in the order transactions ask, not the order they commit. Two
// writers without the lock: A takes 5, B takes 6, B commits, a follower
// reads 6 and remembers it, A commits 5, and the follower never reads 5.
// With every write transaction taking pg_advisory_xact_lock(writeLockKey)
// before its number, and holding it until it commits, the next writer takes
// its number only after the previous one's commit is visible: sequence
// order is commit order, and a follower that has seen n has seen everything
// below n. The cost is that writes run one at a time across all nodes,
// which moderation's rates (a few a second) never notice.
func (c *pgCatalog) write(ctx context.Context, fn func(tx pgx.Tx) error) error {
	if err := c.begin(ctx); err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", writeLockKey); err != nil {
			return fmt.Errorf("write lock: %w", err)
		}
		return fn(tx)
	})
}

// value is v, scanned from a bytea, as a live entry's value: never nil.
func value(v []byte) []byte {
	if v == nil {
		return []byte{}
	}
	return v
}

// Put stores value under kind and key (see Catalog).
func (c *pgCatalog) Put(ctx context.Context, kind Kind, key string, v []byte, node string) (Entry, error) {
	op := "put " + string(kind) + "/" + key
	if err := checkWrite(kind, key, v, node); err != nil {
		return Entry{}, c.fail(op, err)
	}
	e := Entry{Kind: kind, Key: key, Value: append([]byte{}, v...), Node: node}
	err := c.write(ctx, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, sqlPut, string(kind), key, e.Value, node).Scan(&e.Seq, &e.At, nil)
	})
	if err != nil {
		return Entry{}, c.fail(op, err)
	}
	e.At = e.At.UTC()
	return e, nil
}

// Create stores value unless a live entry has kind and key (see Catalog).
func (c *pgCatalog) Create(ctx context.Context, kind Kind, key string, v []byte, node string) (Entry, error) {
	op := "create " + string(kind) + "/" + key
	if err := checkWrite(kind, key, v, node); err != nil {
		return Entry{}, c.fail(op, err)
	}
	e := Entry{Kind: kind, Key: key, Value: append([]byte{}, v...), Node: node}
	var exists bool
	err := c.write(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, sqlCreate, string(kind), key, e.Value, node).Scan(&e.Seq, &e.At, nil)
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		exists = true
		e, err = pgGetEntry(ctx, tx, kind, key)
		return err
	})
	if err != nil {
		return Entry{}, c.fail(op, err)
	}
	if exists {
		return e, fmt.Errorf("%w: %s/%s", ErrExists, kind, key)
	}
	e.At = e.At.UTC()
	return e, nil
}

// querier is what pgGetEntry needs of a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// pgGetEntry reads the live entry of kind and key; pgx.ErrNoRows when there
// is none.
func pgGetEntry(ctx context.Context, q querier, kind Kind, key string) (Entry, error) {
	e := Entry{Kind: kind, Key: key}
	if err := q.QueryRow(ctx, sqlGet, string(kind), key).Scan(&e.Seq, &e.Value, &e.Node, &e.At); err != nil {
		return Entry{}, err
	}
	e.Value = value(e.Value)
	e.At = e.At.UTC()
	return e, nil
}

// Delete removes the entry and records the deletion (see Catalog).
func (c *pgCatalog) Delete(ctx context.Context, kind Kind, key string, node string) (Entry, bool, error) {
	op := "delete " + string(kind) + "/" + key
	if err := checkWrite(kind, key, nil, node); err != nil {
		return Entry{}, false, c.fail(op, err)
	}
	e := Entry{Kind: kind, Key: key, Deleted: true, Node: node}
	err := c.write(ctx, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, sqlDelete, string(kind), key, node).Scan(&e.Seq, &e.At, nil)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return Entry{}, false, nil
	}
	if err != nil {
		return Entry{}, false, c.fail(op, err)
	}
	e.At = e.At.UTC()
	return e, true, nil
}

// Get returns the live entry under kind and key (see Catalog).
func (c *pgCatalog) Get(ctx context.Context, kind Kind, key string) (Entry, bool, error) {
	op := "get " + string(kind) + "/" + key
	if err := checkName(kind, key); err != nil {
		return Entry{}, false, c.fail(op, err)
	}
	if err := c.begin(ctx); err != nil {
		return Entry{}, false, c.fail(op, err)
	}
	e, err := pgGetEntry(ctx, c.pool, kind, key)
	if errors.Is(err, pgx.ErrNoRows) {
		return Entry{}, false, nil
	}
	if err != nil {
		return Entry{}, false, c.fail(op, err)
	}
	return e, true, nil
}

// List returns the live entries of kind under prefix, in key order (see
// Catalog).
func (c *pgCatalog) List(ctx context.Context, kind Kind, prefix string) ([]Entry, error) {
	op := "list " + string(kind) + "/" + prefix
	if err := checkText("kind", string(kind), maxKindLen, false); err != nil {
		return nil, c.fail(op, err)
	}
	if err := checkText("prefix", prefix, maxKeyLen, true); err != nil {
		return nil, c.fail(op, err)
	}
	if err := c.begin(ctx); err != nil {
		return nil, c.fail(op, err)
	}
	sql := `SELECT key, seq, value, node, at FROM replay_catalog_entries WHERE kind = $1 AND key >= $2`
	args := []any{string(kind), prefix}
	if end, ok := prefixEnd(prefix); ok {
		sql += ` AND key < $3`
		args = append(args, end)
	}
	rows, _ := c.pool.Query(ctx, sql+` ORDER BY key`, args...)
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Entry, error) {
		e := Entry{Kind: kind}
		err := row.Scan(&e.Key, &e.Seq, &e.Value, &e.Node, &e.At)
		e.Value, e.At = value(e.Value), e.At.UTC()
		return e, err
	})
	if err != nil {
		return nil, c.fail(op, err)
	}
	return list, nil
}

// Since returns the changes after the sequence number after (see Catalog).
func (c *pgCatalog) Since(ctx context.Context, after int64, limit int) ([]Entry, error) {
	op := fmt.Sprintf("since %d", after)
	after, limit, err := checkSince(after, limit)
	if err != nil {
		return nil, c.fail(op, err)
	}
	if err := c.begin(ctx); err != nil {
		return nil, c.fail(op, err)
	}
	rows, _ := c.pool.Query(ctx, sqlSince, after, limit, maxBatchBytes)
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Entry, error) {
		var e Entry
		err := row.Scan(&e.Seq, &e.Kind, &e.Key, &e.Value, &e.Deleted, &e.Node, &e.At)
		if e.Deleted {
			e.Value = nil
		} else {
			e.Value = value(e.Value)
		}
		e.At = e.At.UTC()
		return e, err
	})
	if err != nil {
		return nil, c.fail(op, err)
	}
	return list, nil
}

// Watch LISTENs on a connection of its own, outside the pool, before it
// returns, so a change that commits after Watch returns wakes the channel.
// A goroutine waits for notifications and, when the connection fails,
// re-connects with backoff and then wakes the channel once, as changes may
// have committed while it was away. The channel is closed when ctx ends or
// the catalog closes (see Catalog).
func (c *pgCatalog) Watch(ctx context.Context) (<-chan struct{}, error) {
	if err := c.begin(ctx); err != nil {
		return nil, c.fail("watch", err)
	}
	conn, err := c.listen(ctx)
	if err != nil {
		return nil, c.fail("watch", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed.Load() {
		closeConn(conn)
		return nil, c.fail("watch", ErrClosed)
	}
	ch := make(chan struct{}, 1)
	c.watchers.Add(1)
	go c.watch(ctx, conn, ch)
	return ch, nil
}

// listen connects outside the pool and LISTENs on notifyChannel.
func (c *pgCatalog) listen(ctx context.Context) (*pgx.Conn, error) {
	cfg := c.pool.Config().ConnConfig
	cfg.RuntimeParams["application_name"] = "replay-catalog-watch"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		closeConn(conn)
		return nil, fmt.Errorf("listen: %w", err)
	}
	return conn, nil
}

// closeConn closes conn, waiting at most a second for the server.
func closeConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	conn.Close(ctx)
}

// watch is Watch's goroutine: it owns conn and ch.
func (c *pgCatalog) watch(ctx context.Context, conn *pgx.Conn, ch chan struct{}) {
	defer c.watchers.Done()
	defer close(ch)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(c.done, cancel)()
	backoff := minBackoff
	for {
		if _, err := conn.WaitForNotification(ctx); err == nil {
			wake(ch)
			backoff = minBackoff
			continue
		}
		closeConn(conn)
		for conn = nil; conn == nil; {
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			backoff = min(2*backoff, maxBackoff)
			conn, _ = c.listen(ctx)
		}
		wake(ch)
	}
}

// wake sends on ch unless a wake-up is pending.
func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Lease takes or renews the lease name for holder on the database's clock
// (see Catalog).
func (c *pgCatalog) Lease(ctx context.Context, name, holder string, ttl time.Duration) (bool, error) {
	op := "lease " + name + " for " + holder
	if err := checkLease(name, holder, ttl); err != nil {
		return false, c.fail(op, err)
	}
	if err := c.begin(ctx); err != nil {
		return false, c.fail(op, err)
	}
	var got string
	err := c.pool.QueryRow(ctx, sqlLease, name, holder, ttl.Seconds()).Scan(&got)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, c.fail(op, err)
	}
	return got == holder, nil
}

// Unlease gives the lease up if holder has it (see Catalog).
func (c *pgCatalog) Unlease(ctx context.Context, name, holder string) error {
	op := "unlease " + name + " for " + holder
	if err := checkLease(name, holder, 1); err != nil {
		return c.fail(op, err)
	}
	if err := c.begin(ctx); err != nil {
		return c.fail(op, err)
	}
	if _, err := c.pool.Exec(ctx, sqlUnlease, name, holder); err != nil {
		return c.fail(op, err)
	}
	return nil
}

// Close ends the watchers and closes the pool's connections; later calls
// do nothing.
func (c *pgCatalog) Close() error {
	c.mu.Lock()
	if c.closed.Swap(true) {
		c.mu.Unlock()
		return nil
	}
	c.mu.Unlock()
	c.stop()
	c.watchers.Wait()
	c.pool.Close()
	return nil
}
