package pgtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// connect opens url or fails t.
func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func TestServer(t *testing.T) {
	start := time.Now()
	s := Start(t)
	t.Logf("started in %v", time.Since(start))
	a, b := s.NewDatabase(t), s.NewDatabase(t)
	if a == b {
		t.Fatalf("two databases with one URL %s", a)
	}
	if !strings.HasPrefix(a, "postgres://") || !strings.Contains(a, "127.0.0.1") {
		t.Errorf("URL %s: want postgres:// on 127.0.0.1", a)
	}
	ctx := context.Background()
	ca, cb := connect(t, a), connect(t, b)
	if _, err := ca.Exec(ctx, "CREATE TABLE only_in_a (x int)"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := cb.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 'only_in_a'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("a table made in one database is in the other")
	}

	// A second Server on the first through EnvURL: its databases are
	// dropped when the test that made them ends.
	var dropped string
	t.Run("external", func(t *testing.T) {
		t.Setenv(EnvURL, s.admin.String())
		ext := Start(t)
		if !ext.external {
			t.Fatalf("%s set, but Start started a server", EnvURL)
		}
		u := ext.NewDatabase(t)
		connect(t, u).Close(ctx)
		dropped = u[strings.LastIndex(u, "/")+1:]
	})
	var exists bool
	if err := ca.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_database WHERE datname = $1)", dropped).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if exists {
		t.Errorf("database %s of %s outlived its test", dropped, EnvURL)
	}
}

func TestFindBinDir(t *testing.T) {
	if _, err := findBinDir("", []string{t.TempDir()}); err == nil || !strings.Contains(err.Error(), "initdb") {
		t.Errorf("in an empty directory: %v, want an error naming initdb", err)
	}
}

func TestMajorVersion(t *testing.T) {
	for v, want := range map[string]int{"15.18 (Debian 15.18-0+deb12u1)": 15, "9.6.24": 9, "17devel": 0, "": 0} {
		if got := majorVersion(v); got != want {
			t.Errorf("majorVersion(%q) = %d, want %d", v, got, want)
		}
	}
}
