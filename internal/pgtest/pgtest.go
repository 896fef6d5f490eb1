// Package pgtest gives tests a real PostgreSQL server, so the catalog's
// PostgreSQL code is tested against the database it runs on rather than a
// fake. Start initdb's a cluster in a temporary directory and runs it on
// 127.0.0.1 for the test's life; NewDatabase gives each test a fresh
// database on it. With REPLAY_POSTGRES set to the URL of an existing server,
// the databases are made there instead. Without the binaries the test is
// skipped, except under CI, where it fails: CI installs them.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names the environment variable that points the tests at an
// existing server instead of one they start: its value is a postgres:// URL
// of a role that may create databases.
const EnvURL = "REPLAY_POSTGRES"

// readyTimeout bounds the wait for a started server to take connections.
const readyTimeout = 30 * time.Second

// Server is a PostgreSQL server the tests may create databases on.
type Server struct {
	admin    *url.URL // the server's maintenance database, as superuser
	external bool     // from EnvURL: its databases are dropped after the test
	prefix   string   // of the database names, unique to this Server
	next     atomic.Int64
}

// Start returns a server for tb's tests: the one EnvURL names, or one it
// starts now and stops (removing its files) when tb ends. It skips tb when
// the PostgreSQL binaries are missing, unless the environment variable CI
// is set.
func Start(tb testing.TB) *Server {
	tb.Helper()
	prefix := "replay_test_" + randomHex(tb, 4) + "_"
	if raw := os.Getenv(EnvURL); raw != "" {
		u, err := url.Parse(raw)
		if err != nil {
			// Not err: it quotes the URL, password and all.
			tb.Fatalf("pgtest: %s is not a URL", EnvURL)
		}
		return &Server{admin: u, external: true, prefix: prefix}
	}
	dir, err := findBinDir(pathDir("initdb"), globbedDirs())
	if err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatalf("pgtest: %v (CI is set, and .ci/run installs Debian's postgresql)", err)
		}
		tb.Skipf("pgtest: %v; install PostgreSQL or set %s", err, EnvURL)
	}
	admin, err := startServer(tb, dir)
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	return &Server{admin: admin, prefix: prefix}
}

// NewDatabase creates an empty database for tb and returns its postgres://
// URL. On a server of EnvURL the database is dropped when tb ends; one that
// Start started goes with the server.
func (s *Server) NewDatabase(tb testing.TB) string {
	tb.Helper()
	name := s.prefix + strconv.FormatInt(s.next.Add(1), 10)
	err := s.exec(func(ctx context.Context, conn *pgx.Conn) error {
		// FILE_COPY (PostgreSQL 15 on) copies template1's files, about three
		// times faster than the default of logging them block by block.
		sql := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
		if majorVersion(conn.PgConn().ParameterStatus("server_version")) >= 15 {
			sql += " STRATEGY = FILE_COPY"
		}
		_, err := conn.Exec(ctx, sql)
		return err
	})
	if err != nil {
		tb.Fatalf("pgtest: create database %s: %v", name, err)
	}
	if s.external {
		tb.Cleanup(func() {
			err := s.exec(func(ctx context.Context, conn *pgx.Conn) error {
				_, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
				return err
			})
			if err != nil {
				tb.Errorf("pgtest: drop database %s: %v", name, err)
			}
		})
	}
	u := *s.admin
	u.Path = "/" + name
	return u.String()
}

// exec runs fn on a connection to the maintenance database.
func (s *Server) exec(fn func(context.Context, *pgx.Conn) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.admin.String())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return fn(ctx, conn)
}

// majorVersion returns the major version of a server_version such as
// "15.18 (Debian 15.18-0+deb12u1)" or "9.6.24", or 0.
func majorVersion(v string) int {
	major, _, _ := strings.Cut(v, ".")
	n, _ := strconv.Atoi(strings.TrimSpace(major))
	return n
}

// randomHex returns n random bytes in hex.
func randomHex(tb testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	return hex.EncodeToString(b)
}

// pathDir returns the directory of the program name found on PATH, or "".
func pathDir(name string) string {
	p, err := exec.LookPath(name)
	if err != nil {
		return ""
	}
	return filepath.Dir(p)
}

// globbedDirs returns Debian's /usr/lib/postgresql/<version>/bin, newest
// version first.
func globbedDirs() []string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	version := func(dir string) float64 {
		v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(dir)), 64)
		return v
	}
	slices.SortFunc(dirs, func(a, b string) int {
		switch va, vb := version(a), version(b); {
		case va > vb:
			return -1
		case va < vb:
			return 1
		}
		return strings.Compare(a, b)
	})
	return dirs
}

// findBinDir returns the first of first (when not "") and then dirs that
// holds both initdb and postgres.
func findBinDir(first string, dirs []string) (string, error) {
	if first != "" {
		dirs = append([]string{first}, dirs...)
	}
	for _, dir := range dirs {
		_, err1 := exec.LookPath(filepath.Join(dir, "initdb"))
		_, err2 := exec.LookPath(filepath.Join(dir, "postgres"))
		if err1 == nil && err2 == nil {
			return dir, nil
		}
	}
	return "", errors.New("no initdb and postgres on PATH nor in /usr/lib/postgresql/*/bin")
}

// startServer initdb's a cluster in a new temporary directory and starts
// postgres on it, on 127.0.0.1 and a free port, retrying with another port
// if one is taken meanwhile. tb's cleanup stops the server and removes the
// directory.
func startServer(tb testing.TB, bin string) (*url.URL, error) {
	base, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, err
	}
	tb.Cleanup(func() { os.RemoveAll(base) })
	// PostgreSQL refuses to run as root: as root, both programs run as the
	// postgres user, who then owns base (os.TempDir is world-traversable).
	asUser, err := runAsServerUser(base)
	if err != nil {
		return nil, err
	}
	data := filepath.Join(base, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres",
		"-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync")
	initdb.Dir = base
	asUser(initdb)
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	for try := 1; ; try++ {
		admin, portTaken, err := runServer(tb, bin, base, data, asUser)
		if !portTaken || try == 3 {
			return admin, err
		}
	}
}

// runServer runs postgres on data and waits until it takes connections;
// portTaken says it failed because another program took the port between
// its choice and postgres's bind.
func runServer(tb testing.TB, bin, base, data string, asUser func(*exec.Cmd)) (admin *url.URL, portTaken bool, err error) {
	port, err := freePort()
	if err != nil {
		return nil, false, err
	}
	logPath := filepath.Join(base, fmt.Sprintf("postgres-%d.log", port))
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, false, err
	}
	defer logFile.Close()
	cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", data,
		"-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories=",
		"-c", "fsync=off",
		"-c", "synchronous_commit=off",
		"-c", "full_page_writes=off",
		"-c", "max_connections=200")
	cmd.Dir = base
	cmd.Stdout, cmd.Stderr = logFile, logFile
	asUser(cmd)
	if err := cmd.Start(); err != nil {
		return nil, false, fmt.Errorf("postgres: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	tb.Cleanup(func() {
		stopServer(cmd.Process)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	admin = &url.URL{
		Scheme:   "postgres",
		User:     url.User("postgres"),
		Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		Path:     "/postgres",
		RawQuery: "sslmode=disable",
	}
	deadline := time.Now().Add(readyTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn, err := pgx.Connect(ctx, admin.String())
		cancel()
		if err == nil {
			conn.Close(context.Background())
			return admin, false, nil
		}
		select {
		case werr := <-exited:
			exited <- werr
			tail := logTail(logPath)
			return nil, strings.Contains(tail, "could not bind"),
				fmt.Errorf("postgres exited (%v) before taking connections on 127.0.0.1:%d; its log ends:\n%s", werr, port, tail)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, false, fmt.Errorf("postgres took no connection on 127.0.0.1:%d within %v (last: %v); its log ends:\n%s", port, readyTimeout, err, logTail(logPath))
		}
	}
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// logTail returns the last lines of the log at path.
func logTail(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	const most = 4096
	if fi, err := f.Stat(); err == nil && fi.Size() > most {
		f.Seek(fi.Size()-most, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	return strings.TrimSpace(string(b))
}
