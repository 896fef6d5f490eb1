// Package server is the archive's HTTP service: the JSON API under
// /api/v1/, /healthz, /metrics and the moderators' web page, over one open
// replay.Archive. It authenticates callers by bearer token (the owner by
// the local secret: the login link in a browser, a challenge answered on
// the command line), checks each request against the caller's role, refuses
// what a page of another origin or name sends, and answers every error as
// JSON. The JSON it answers is package wire's, which the command line's
// --json prints too.
package server

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/prometheus/client_golang/prometheus"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/internal/ownerauth"
)

// Config tunes a Server. The zero value is a good default.
type Config struct {
	// MaxUpload bounds an uploaded file (default 4 GiB).
	MaxUpload int64
	// PruneEvery applies the stored retention policy on this schedule
	// (0: never).
	PruneEvery time.Duration
	// RecompressEvery re-encodes sealed recordings older than
	// RecompressAfter at zstd's best level on this schedule (0: never;
	// replay.Archive.Recompress). It takes one core while it runs.
	RecompressEvery time.Duration
	RecompressAfter time.Duration
	// Web serves the moderators' page at / (nil: no page).
	Web http.Handler
	// Logger receives request errors and scheduled work (default: discard).
	Logger *slog.Logger
	// LocalSecret, when set, is the owner's credential (admin). Serve
	// writes it to a 0600 file in the archive directory, so only the
	// owner's command line can read it; the command line proves it holds
	// it without sending it (ownerauth.Authorization), and the owner's
	// browser carries it from the login link (ownerauth.LoginURL).
	LocalSecret string
	// Hosts are the names, besides its IP addresses and localhost, that
	// the server answers to in a request's Host header (the name a reverse
	// proxy or the users reach it by). A request for any other name is
	// refused: a page whose name was rebound to this machine reads nothing.
	Hosts []string
	// TrustedProxies are the addresses of reverse proxies whose
	// X-Forwarded-For names the client, for the limit on wrong tokens.
	// From anyone else the header is ignored.
	TrustedProxies []netip.Prefix
	// CLI runs commands the owner's command line forwards to the server
	// (POST /api/v1/cli, only with the local secret); nil: none.
	CLI http.Handler
	// Now is the clock (default time.Now).
	Now func() time.Time
	// WriteStall is how long one write of a response may wait for a
	// client that does not read (default 30 s): a download sends 64 KiB
	// at least every WriteStall or its connection is closed.
	WriteStall time.Duration
	// MaxSpool bounds a clip, conversion or redacted file, which is built
	// into a file in the archive's tmp directory before it is sent
	// (default 4 GiB): past it the request is 413 too_large.
	MaxSpool int64
	// SearchTimeout bounds one search (default 5 s): past it the search
	// stops and the caller gets 400 bad_query.
	SearchTimeout time.Duration
	// Watch bounds the shared viewings of recordings (watch.go).
	Watch WatchConfig
}

// Server serves one archive over HTTP.
type Server struct {
	x       *replay.Archive
	cfg     Config
	log     *slog.Logger
	mux     *http.ServeMux
	metrics *metrics
	limiter *failLimiter
	// challenges are the owner challenges issued (owner.go).
	challenges challenges

	// uploads counts uploads in flight, so shutdown can wait for them.
	uploads sync.WaitGroup
	// heavy bounds the requests that decode and re-encode a recording
	// (clips, conversions, redacted files) to half the cores (at least
	// one), so that a burst of them queues here and leaves CPU to searches
	// and ingest.
	heavy chan struct{}
	// pseudonymKey keys the pseudonyms of player ids in viewers' answers
	// (redact.go).
	pseudonymKey [32]byte
	// watch are the open rooms of shared viewings (watch.go), closed on
	// shutdown.
	watch *watchRooms
}

// New returns a server over x.
func New(x *replay.Archive, cfg Config) *Server {
	if cfg.MaxUpload <= 0 {
		cfg.MaxUpload = 4 << 30
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.WriteStall <= 0 {
		cfg.WriteStall = 30 * time.Second
	}
	if cfg.MaxSpool <= 0 {
		cfg.MaxSpool = 4 << 30
	}
	if cfg.SearchTimeout <= 0 {
		cfg.SearchTimeout = 5 * time.Second
	}
	s := &Server{x: x, cfg: cfg, log: cfg.Logger, mux: http.NewServeMux(), metrics: newMetrics(), limiter: newFailLimiter(cfg.Now),
		heavy: make(chan struct{}, max(1, runtime.GOMAXPROCS(0)/2))}
	rand.Read(s.pseudonymKey[:])
	s.watch = newWatchRooms(cfg.Watch, cfg.Now, func(room, name string) string { return s.pseudonym("watch "+room, name) })
	s.metrics.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "replay_index_synced_timestamp_seconds",
		Help: "When the search index's last sync began: what was archived before is searchable (the index's lag is now minus this).",
	}, func() float64 {
		t := x.IndexedAt()
		if t.IsZero() {
			return 0
		}
		return float64(t.UnixNano()) / 1e9
	}))
	s.metrics.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "replay_interactive_requests",
		Help: "Requests a person waits on, their body in and their answer not begun: while above 0, ingests and index updates run on one core fewer and pause between their pieces.",
	}, func() float64 { return float64(x.InteractiveNow()) }))
	s.routes()
	return s
}

// Handler is the server's whole HTTP handler: the API, /healthz, /metrics
// and the page, behind the Host check.
func (s *Server) Handler() http.Handler { return s.checkHost(s.mux) }

// ListenAndServe serves on addr until ctx is done, then shuts down
// gracefully: the listener closes, requests in flight (uploads too) get
// up to grace to finish, and an upload cut short is rolled back by its
// context. It refuses a non-loopback address while no token exists, and
// writes the endpoint and local secret files while it runs.
func (s *Server) ListenAndServe(ctx context.Context, addr, certFile, keyFile string, grace time.Duration, ready func(url string)) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--listen %q: %w", addr, err)
	}
	toks, err := s.x.Tokens()
	if err != nil {
		return err
	}
	if len(toks) == 0 && !isLoopbackHost(host) {
		return fmt.Errorf("--listen %s: no token exists, so nobody but the owner could sign in, and the owner's secret would cross the network; listen on 127.0.0.1, or create tokens first ('archivectl token create')", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	scheme := "http"
	if certFile != "" || keyFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			ln.Close()
			return fmt.Errorf("TLS: %w", err)
		}
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
		scheme = "https"
	}
	url := scheme + "://" + ln.Addr().String()
	if err := s.writeEndpoint(url); err != nil {
		ln.Close()
		return err
	}
	defer s.removeEndpoint()

	hs := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	hs.RegisterOnShutdown(s.watch.close) // streams never go idle: end them
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	if s.cfg.PruneEvery > 0 {
		go s.every(ctx, s.cfg.PruneEvery, s.prunePass)
	}
	if s.cfg.RecompressEvery > 0 {
		go s.every(ctx, s.cfg.RecompressEvery, s.recompressPass)
	}
	go s.every(ctx, purgeEvery, s.purgePass) // takedowns past their grace period
	if ready != nil {
		ready(url)
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := hs.Shutdown(sctx); errors.Is(err, context.DeadlineExceeded) {
		// Past the grace period: cut the connections still open. An
		// upload among them fails its read, and its spool is removed
		// before anything of it is committed.
		hs.Close()
	}
	s.uploads.Wait()
	return nil
}

func (s *Server) writeEndpoint(url string) error {
	dir := s.x.Dir()
	if s.cfg.LocalSecret != "" {
		if err := writePrivate(filepath.Join(dir, ownerauth.SecretFile), []byte(s.cfg.LocalSecret+"\n")); err != nil {
			return fmt.Errorf("write local secret: %w", err)
		}
	}
	b, _ := json.Marshal(ownerauth.Endpoint{URL: url, PID: os.Getpid(), Since: s.cfg.Now().UTC()})
	return writePrivate(filepath.Join(dir, ownerauth.EndpointFile), b)
}

func (s *Server) removeEndpoint() {
	os.Remove(filepath.Join(s.x.Dir(), ownerauth.EndpointFile))
	os.Remove(filepath.Join(s.x.Dir(), ownerauth.SecretFile))
}

// writePrivate writes a file only its owner can read, replacing any old one.
func writePrivate(path string, b []byte) error {
	tmp := path + ".tmp"
	os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// acquireHeavy waits for a slot for decoding work; release it when done.
func (s *Server) acquireHeavy(ctx context.Context) (release func(), err error) {
	select {
	case s.heavy <- struct{}{}:
		return func() { <-s.heavy }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// every runs pass every period until ctx ends.
func (s *Server) every(ctx context.Context, period time.Duration, pass func(context.Context)) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pass(ctx)
	}
}

// prunePass is one scheduled prune, logged.
func (s *Server) prunePass(ctx context.Context) {
	rep, err := s.ScheduledPrune(ctx)
	switch {
	case errors.Is(err, replay.ErrJanitorElsewhere):
		s.log.Debug("scheduled prune: another node is the janitor")
	case err != nil && ctx.Err() == nil:
		s.metrics.errors.WithLabelValues("prune").Inc()
		s.log.Error("scheduled prune", "err", err)
	case rep != nil:
		s.log.Info("scheduled prune", "removed", len(rep.Removed), "bytes_returned", rep.BytesReturned)
	}
}

// recompressPass is one scheduled recompress, logged.
func (s *Server) recompressPass(ctx context.Context) {
	rep, err := s.x.Recompress(ctx, replay.Actor{Name: "scheduler", Role: replay.RoleAdmin},
		archive.RecompressOptions{OlderThan: s.cfg.RecompressAfter})
	switch {
	case err != nil && ctx.Err() == nil:
		s.metrics.errors.WithLabelValues("recompress").Inc()
		s.log.Error("scheduled recompress", "err", err)
	case rep != nil && rep.Recordings > 0:
		s.log.Info("scheduled recompress", "recordings", rep.Recordings, "stored_before", rep.StoredBefore,
			"stored_after", rep.StoredAfter, "disk_after", rep.DiskAfter, "elapsed", rep.Elapsed.Round(time.Millisecond))
	}
}

// ScheduledPrune applies the stored retention policy once, as the
// scheduler does; it returns nil when no policy is stored.
func (s *Server) ScheduledPrune(ctx context.Context) (*archive.PruneReport, error) {
	pol, err := s.x.Policy()
	if err != nil || pol == nil || pol.IsZero() {
		return nil, err
	}
	plan, err := s.x.Plan(ctx, *pol, archive.PlanOptions{})
	if err != nil {
		return nil, err
	}
	rep, err := s.x.Prune(ctx, replay.Actor{Name: "scheduler", Role: replay.RoleAdmin}, plan)
	if rep != nil {
		s.metrics.pruned.Add(float64(len(rep.Removed)))
		s.metrics.prunes.Inc()
	}
	return rep, err
}

// isLoopbackHost reports whether host is a loopback name or address.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
