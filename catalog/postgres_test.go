package catalog_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/replayarchive/replay/catalog"
	"github.com/replayarchive/replay/catalog/catalogtest"
	"github.com/replayarchive/replay/internal/pgtest"
)

// openPostgres opens a catalog on url or fails t.
func openPostgres(t *testing.T, url string) catalog.Catalog {
	t.Helper()
	c, err := catalog.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// exec runs sql on the database at url or fails t.
func exec(t *testing.T, url, sql string, args ...any) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// TestPostgres runs the contract with two nodes on each database, and the
// PostgreSQL-only tests, on one server.
func TestPostgres(t *testing.T) {
	t.Parallel()
	srv := pgtest.Start(t)
	t.Run("Contract", func(t *testing.T) {
		catalogtest.RunNodes(t, func(t *testing.T) (catalog.Catalog, catalog.Catalog) {
			url := srv.NewDatabase(t)
			return openPostgres(t, url), openPostgres(t, url)
		})
	})

	// Nodes that open a new database at once all make (or find) the
	// schema.
	t.Run("OpenAtOnce", func(t *testing.T) {
		t.Parallel()
		url := srv.NewDatabase(t)
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range errs {
			wg.Go(func() {
				c, err := catalog.Open(t.Context(), url)
				if err == nil {
					_, err = c.Put(t.Context(), catalog.KindSetting, "policy", nil, "n")
					c.Close()
				}
				errs[i] = err
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("node %d: %v", i, err)
			}
		}
	})

	// A watcher whose connection is cut re-connects, wakes once for what
	// it may have missed, and then wakes on changes again.
	t.Run("WatchReconnects", func(t *testing.T) {
		t.Parallel()
		url := srv.NewDatabase(t)
		c := openPostgres(t, url)
		defer c.Close()
		w, err := c.Watch(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		exec(t, url, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'replay-catalog-watch' AND datname = current_database()`)
		select {
		case <-w:
		case <-time.After(5 * time.Second):
			t.Fatal("no wake-up after the watcher's connection was cut")
		}
		if _, err := c.Put(t.Context(), catalog.KindFlag, "r/x", nil, "n"); err != nil {
			t.Fatal(err)
		}
		select {
		case <-w:
		case <-time.After(2 * time.Second):
			t.Fatal("no wake-up for a put after re-connecting")
		}
	})

	t.Run("NewerSchema", func(t *testing.T) {
		t.Parallel()
		url := srv.NewDatabase(t)
		openPostgres(t, url).Close()
		exec(t, url, `UPDATE replay_catalog_schema SET version = 99`)
		if c, err := catalog.Open(t.Context(), url); err == nil || !strings.Contains(err.Error(), "newer build") {
			if err == nil {
				c.Close()
			}
			t.Errorf("open of a newer schema: %v, want a refusal", err)
		}
	})

	// Errors name the database but never hold its password.
	t.Run("Redacted", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		for _, url := range []string{
			"postgres://alice:hunter2@127.0.0.1:1/replay?sslmode=disable",
			"postgresql://alice:hunter2@127.0.0.1:notaport/replay",
			"postgres://127.0.0.1:1/replay?password=hunter2&sslmode=disable",
			"postgres://alice:hunter2@127.0.0.1:1/replay?sslmode=nonsense",
		} {
			c, err := catalog.Open(ctx, url)
			if err == nil {
				c.Close()
				t.Errorf("open %s: no error", url)
				continue
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("open's error shows the password: %v", err)
			}
			if !strings.HasPrefix(err.Error(), "catalog: open postgres") {
				t.Errorf("open's error does not say what it opened: %v", err)
			}
		}
	})
}
