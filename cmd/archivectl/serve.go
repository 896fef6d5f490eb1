// archivectl serve: hold the archive and serve the HTTP API and the web page.

package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/internal/ownerauth"
	"github.com/replayarchive/replay/server"
	"github.com/replayarchive/replay/web"
)

// serveOptions are the flags of archivectl serve.
type serveOptions struct {
	listen     string
	pruneEvery string
	// recompressEvery and recompressAfter schedule 'recompress'.
	recompressEvery string
	recompressAfter string
	maxUpload       string
	tlsCert         string
	tlsKey          string
	grace           string
	watch           stringList
	settle          string
	remote          string
	s3              s3Flags
	remoteRW        bool
	uploadAfter     string
	tierEvery       string
	hosts           stringList
	trustedProxies  stringList
	catalog         string
}

// AddFlags declares the flags on fs.
func (o *serveOptions) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.listen, "listen", "127.0.0.1:8480", "listen on `ADDR` (host:port)")
	fs.StringVar(&o.pruneEvery, "prune-every", "", "apply the stored retention policy every `DUR` (e.g. 1h)")
	fs.StringVar(&o.recompressEvery, "recompress-every", "", "re-encode sealed recordings at zstd's best level every `DUR` (e.g. 24h; see 'help recompress')")
	fs.StringVar(&o.recompressAfter, "recompress-after", "7d", "with --recompress-every, only recordings older than `DUR`")
	fs.StringVar(&o.maxUpload, "max-upload", "4GiB", "refuse uploads over `SIZE`")
	fs.StringVar(&o.tlsCert, "tls-cert", "", "serve HTTPS with this certificate `FILE`")
	fs.StringVar(&o.tlsKey, "tls-key", "", "and this key `FILE`")
	fs.StringVar(&o.grace, "grace", "30s", "on shutdown, give requests in flight `DUR` to finish")
	fs.Var(&o.watch, "watch", "follow `DIR` (repeatable): ingest each file once complete or idle for --settle")
	fs.StringVar(&o.settle, "settle", "10m", "with --watch, a file unchanged for `DUR` is ready even if not complete")
	fs.StringVar(&o.remote, "remote", "", "serve the recordings in bucket `s3://BUCKET/PREFIX` (read-only: a second node), as 'remote set --read-only' stores it")
	o.s3.AddFlags(fs)
	fs.BoolVar(&o.remoteRW, "remote-write", false, "with --remote, upload to the bucket and delete from it (this node writes)")
	fs.StringVar(&o.uploadAfter, "upload-after", "", "with --remote-write, upload sealed recordings older than `DUR` (0s: at once; default 5m, as 'remote set')")
	fs.StringVar(&o.tierEvery, "tier-every", "1m", "with a remote store, upload (or, read-only, catch up) every `DUR`")
	fs.Var(&o.hosts, "host", "also answer to the name `NAME` in the Host header (repeatable; the name a proxy or users reach the server by)")
	fs.StringVar(&o.catalog, "catalog", "", "share moderators' marks, tokens, settings and the audit log with other nodes through `URL` (postgres://…; remembered)")
	fs.Var(&o.trustedProxies, "trusted-proxy", "believe X-Forwarded-For from the reverse proxy at `CIDR` (repeatable), for the limit on wrong tokens")
}

func cmdServe() *command {
	o := new(serveOptions)
	return &command{
		name: "serve", args: "[--listen ADDR] [--prune-every DUR] [--recompress-every DUR] [--max-upload SIZE] [--tls-cert F --tls-key F] [--watch DIR]... [--settle DUR]",
		summary: "serve the archive: the JSON API, /metrics and the moderators' web page",
		help: `Holds the archive open and serves it over HTTP: the JSON API under
/api/v1/ (docs/API.md), /healthz, /metrics (Prometheus) and the moderators'
web page at /. Open the printed URL in a browser.

While it runs, every other archivectl command for this archive is sent to
it and run there, so searches, exports and flags work while it ingests or
prunes. The command line proves it is the owner with a secret written to
serve.secret in the archive directory (mode 0600).

Signing in: serve prints a login link (the web page's URL with the
owner's secret after #login=; 'archivectl login' prints it again);
opening it signs that browser tab in as the owner (admin). Nobody else
is anybody for calling from this machine: every other request needs
"Authorization: Bearer TOKEN" from 'archivectl token create': viewers
search, show, read frames and download redacted clips; moderators also
flag, hold and take down; admins also download whole original files, set
retention, prune and manage tokens. Without tokens, a non-loopback
--listen is refused.

Pages of other sites: the server answers only to its IP addresses,
localhost and the names given with --host (so a page whose name was
rebound to this machine reads nothing), and a request that changes the
archive must come from the server's own page or from no page, with a JSON
(or, for uploads, application/octet-stream) body. Ten wrong tokens in a
minute from one client, or for one token prefix, get 429 for the next
guesses; tokens that work are still accepted. Behind a reverse proxy, name
it with --trusted-proxy so that its X-Forwarded-For counts, and give the
public name with --host.

--remote s3://BUCKET/PREFIX --endpoint URL makes this server a second
node of a bucket another node uploads to: it adds their recordings to its
catalog and index every --tier-every and serves them, reading chunks
through its local cache; --remote-write lets it upload and delete too
(several writers may share a bucket: each upload writes an object of its
own, and what another writer uploaded first is kept, not replaced), each
sealed recording once it is older than --upload-after (default 5m). With
a remote store set by 'archivectl remote set', the server uploads sealed
recordings every --tier-every.

--catalog postgres://USER@HOST/DB makes this server one node of several
that share a PostgreSQL database: flags, holds, takedowns, tokens, the
retention policy, the bucket's configuration and the audit log are made
there and applied on every node within seconds; one node at a time
prunes and repairs (it holds a lease meanwhile, which lapses two minutes
after a node that dies holding it). With the same bucket, a node started
on an empty disk rebuilds everything from the two. The archive remembers
the URL without its password: give the password in PGPASSWORD or
~/.pgpass.

--recompress-every DUR re-encodes, on that schedule, the sealed recordings
older than --recompress-after (7d) at zstd's best level, once each, and
gives the space saved back (as 'archivectl recompress'; about 1.3% of a
DDNet archive, one core for about 90 s per GB of native recording).

--watch DIR (repeatable) follows a game server's directory inside the
server, as 'archivectl ingest --follow' does: each file is ingested once
complete or idle for --settle, and logged.

SIGTERM or Ctrl-C shuts down gracefully: requests in flight get
--grace to finish; an upload cut short leaves nothing behind.`,
		access: noAccess,
		flags:  o.AddFlags,
		run:    func(ctx context.Context, e *env, args []string) error { return runServe(ctx, e, o, args) },
	}
}

func runServe(ctx context.Context, e *env, o *serveOptions, args []string) error {
	if len(args) > 0 {
		return usagef("serve takes no arguments")
	}
	cfg := server.Config{Web: web.Handler(), LocalSecret: replay.NewSecret(), Hosts: o.hosts,
		Logger: slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))}
	for _, p := range o.trustedProxies {
		prefix, err := parsePrefix(p)
		if err != nil {
			return usagef("--trusted-proxy %q: %v", p, err)
		}
		cfg.TrustedProxies = append(cfg.TrustedProxies, prefix)
	}
	var err error
	if o.pruneEvery != "" {
		if cfg.PruneEvery, err = parseDurationFlag("--prune-every", o.pruneEvery); err != nil {
			return err
		}
	}
	if o.recompressEvery != "" {
		if cfg.RecompressEvery, err = parseDurationFlag("--recompress-every", o.recompressEvery); err != nil {
			return err
		}
		if cfg.RecompressEvery <= 0 {
			return usagef("--recompress-every: %q: must be positive", o.recompressEvery)
		}
	}
	if cfg.RecompressAfter, err = parseDurationFlag("--recompress-after", o.recompressAfter); err != nil {
		return err
	}
	if cfg.MaxUpload, err = parseSizeFlag("--max-upload", o.maxUpload); err != nil {
		return err
	}
	grace, err := parseDurationFlag("--grace", o.grace)
	if err != nil {
		return err
	}
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return usagef("--tls-cert and --tls-key go together")
	}
	settle, err := parseSettle(o.settle)
	if err != nil {
		return err
	}
	watchDirs := make([]string, len(o.watch))
	for i, d := range o.watch {
		watchDirs[i] = e.path(d)
	}
	if err := checkDirs("--watch", watchDirs); err != nil {
		return err
	}
	// Live grows (watched and pushed files) share their index syncs,
	// at most four a second: hundreds of growing files stay searchable
	// within a second or two (docs/PERFORMANCE.md, BenchmarkFleet).
	x, err := replay.Open(e.archiveDir, replay.Options{Create: true, Wait: e.wait, Command: "archivectl serve", Logger: cfg.Logger, Catalog: o.catalog,
		LiveIndexEvery: 250 * time.Millisecond})
	if err != nil {
		return err
	}
	e.x = x // closed by run
	tierEvery, err := parseDurationFlag("--tier-every", o.tierEvery)
	if err != nil {
		return err
	}
	if o.uploadAfter != "" && !o.remoteRW {
		return usagef("--upload-after goes with --remote-write (a node that reads the bucket uploads nothing)")
	}
	if o.remote != "" {
		rc := o.s3.config(e, o.remote, !o.remoteRW)
		if o.uploadAfter != "" {
			d, err := parseDurationFlag("--upload-after", o.uploadAfter)
			if err != nil {
				return err
			}
			rc.UploadAfter = &d
		}
		if err := x.SetRemote(ctx, e.who, rc); err != nil {
			return err
		}
	} else if o.remoteRW {
		return usagef("--remote-write goes with --remote")
	}
	cfg.CLI = cliHandler(x, e.archiveDir)
	s := server.New(x, cfg)
	{
		// Other nodes' changes, until the server stops.
		fctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			if err := x.FollowCatalog(fctx); err != nil {
				cfg.Logger.Error("shared catalog", "err", err)
			}
		}()
		defer func() { stop(); <-done }()
	}
	if len(watchDirs) > 0 {
		// The watcher stops with the server, before the archive closes.
		wctx, stop := context.WithCancel(ctx)
		wait := startWatch(wctx, x, watchDirs, settle, cfg.Logger) // follow.go
		defer wait()
		defer stop()
	}
	if rc, err := x.RemoteConfig(); err != nil {
		return err
	} else if rc != nil {
		tctx, stop := context.WithCancel(ctx)
		wait := startTier(tctx, x, tierEvery, cfg.Logger) // remote.go
		defer wait()
		defer stop()
	}
	return s.ListenAndServe(ctx, o.listen, o.tlsCert, o.tlsKey, grace, func(url string) {
		fmt.Fprintf(e.stdout, "serving %s at %s\nsign in to the web page as the owner: %s\n", e.archiveDir, url, ownerauth.LoginURL(url, cfg.LocalSecret))
	})
}

// parsePrefix reads an address range (CIDR) or a single address.
func parsePrefix(s string) (netip.Prefix, error) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("want an address or a CIDR range (10.0.0.0/8, ::1)")
	}
	return netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()), nil
}

func parseDurationFlag(name, v string) (time.Duration, error) {
	d, err := parseDuration(v)
	if err != nil {
		return 0, usagef("%s: %v", name, err)
	}
	return d, nil
}

func parseSizeFlag(name, v string) (int64, error) {
	n, err := parseSize(v)
	if err != nil {
		return 0, usagef("%s: %v", name, err)
	}
	return n, nil
}
