// archivectl remote: configure the object-storage tier, move sealed
// recordings to it, and catch up on what another node uploaded.

package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/archive/blob"
	"github.com/replayarchive/replay/internal/units"
)

// s3Flags say how to reach a bucket; remote set and serve --remote share
// them. None holds a secret: keys come from AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY or the credentials file.
type s3Flags struct {
	endpoint, region, credentialsFile, profile string
}

// AddFlags declares the flags on fs.
func (o *s3Flags) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.endpoint, "endpoint", "", "S3 endpoint `URL` (http://host:port or https://host)")
	fs.StringVar(&o.region, "region", "", "S3 `REGION` (default us-east-1)")
	fs.StringVar(&o.credentialsFile, "credentials-file", "", "AWS credentials `FILE` (else AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)")
	fs.StringVar(&o.profile, "profile", "", "`PROFILE` in the credentials file (default \"default\")")
}

// config builds the stored configuration for url.
func (o *s3Flags) config(e *env, url string, readOnly bool) archive.RemoteConfig {
	cf := o.credentialsFile
	if cf != "" {
		cf = e.path(cf)
	}
	return archive.RemoteConfig{URL: url, S3: blob.S3Options{
		Endpoint: o.endpoint, Region: o.region, CredentialsFile: cf, Profile: o.profile, ReadOnly: readOnly}}
}

// remoteOptions are the flags of archivectl remote.
type remoteOptions struct {
	s3          s3Flags
	readOnly    bool
	uploadAfter string
	cache       string
	olderThan   string
	json        bool
}

// AddFlags declares the flags on fs.
func (o *remoteOptions) AddFlags(fs *flag.FlagSet) {
	o.s3.AddFlags(fs)
	fs.BoolVar(&o.readOnly, "read-only", false, "set: only read the bucket (a second node; 'remote sync' catches up)")
	fs.StringVar(&o.uploadAfter, "upload-after", "", "set: upload sealed recordings older than `DUR` (from start, or ingest when later; 0s: at once; default 5m)")
	fs.StringVar(&o.cache, "cache", "1GiB", "set: bound the local chunk cache to `SIZE`")
	fs.StringVar(&o.olderThan, "older-than", "", "upload: this `DUR` instead of the stored --upload-after (0s: every sealed recording)")
	fs.BoolVar(&o.json, "json", false, "print JSON")
}

func cmdRemote() *command {
	o := new(remoteOptions)
	return &command{
		name: "remote", args: "set s3://BUCKET/PREFIX --endpoint URL [flags] | show | upload [--older-than DUR] | sync",
		summary: "keep sealed recordings in an S3 bucket; a second node reads them",
		access:  writeAccess,
		help: `'remote set' stores where sealed recordings go: an S3-compatible bucket
and prefix, its --endpoint, and how old a recording must be to move
(--upload-after, default 5m: counted from its start, or from its ingest
when it has no start or one after its ingest, so a recording goes up at
most that long after it was ingested or sealed; 0s: as soon as sealed;
without the flag the current default applies, also after an upgrade). A
recording not yet uploaded lives on this disk alone. It checks the
bucket first: that it exists and that the server honours conditional
writes. No secret is stored: the keys come from AWS_ACCESS_KEY_ID and
AWS_SECRET_ACCESS_KEY, or the --credentials-file named (read at each use).

'remote upload' moves every sealed recording past the age: its chunks go
up as one object of its own, rec/YYYY-MM/<nonce>/<id> (written only if
absent), then its manifest as manifests/<id> (written only if absent: the
commit point, naming the object and the writer), then the local chunks are
dropped once the object is found in place. A recording another writer
uploaded first stays local and is reported. Seeks and clips read one ranged GET per chunk through a local
cache bounded by --cache; a whole export is one GET, checked against the
sha256. Takedowns and retention delete the objects. 'serve' uploads every
--tier-every by itself.

'remote set --read-only' makes this archive a second node: 'remote sync'
(and 'serve', every --tier-every) adds the recordings the writing node
uploaded and removes those it deleted; list, search, show and export
work on them. The bucket is never written from a read-only node.

'check' lists the bucket too: objects without a manifest (an upload cut
short) and manifests without their object; 'check --repair' deletes them.`,
		flags: o.AddFlags,
		run:   func(ctx context.Context, e *env, args []string) error { return runRemote(ctx, e, o, args) },
	}
}

func runRemote(ctx context.Context, e *env, o *remoteOptions, args []string) error {
	if len(args) == 0 {
		return usagef("remote takes set, show, upload or sync")
	}
	x, err := e.lib()
	if err != nil {
		return err
	}
	switch args[0] {
	case "set":
		if len(args) != 2 {
			return usagef("remote set takes the bucket URL, s3://BUCKET/PREFIX")
		}
		cfg := o.s3.config(e, args[1], o.readOnly)
		if o.uploadAfter != "" {
			d, err := parseDurationFlag("--upload-after", o.uploadAfter)
			if err != nil {
				return err
			}
			cfg.UploadAfter = &d
		}
		if cfg.CacheBytes, err = parseSizeFlag("--cache", o.cache); err != nil {
			return err
		}
		if err := x.SetRemote(ctx, e.who, cfg); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "remote: %s\n", replay.DescribeRemote(&cfg))
		return nil
	case "show":
		cfg, err := x.RemoteConfig()
		if err != nil {
			return err
		}
		if o.json {
			return writeJSON(e, cfg)
		}
		if cfg == nil {
			fmt.Fprintln(e.stdout, "no remote store")
			return nil
		}
		fmt.Fprintf(e.stdout, "remote: %s\n", replay.DescribeRemote(cfg))
		if note := uploadDelayNote(cfg); note != "" {
			fmt.Fprintf(e.stdout, "note: %s\n", note)
		}
		return nil
	case "upload":
		var opts archive.UploadOptions
		if o.olderThan != "" {
			if opts.OlderThan, err = parseDurationFlag("--older-than", o.olderThan); err != nil {
				return err
			}
			opts.AtOnce = opts.OlderThan == 0 // a flag given is a flag honoured
		}
		if !o.json {
			opts.Progress = func(m *archive.Manifest) {
				fmt.Fprintf(e.stdout, "%s  uploaded  %s  %s\n", m.ID, m.Remote, humanBytes(m.RemoteBytes))
			}
		}
		rep, err := x.Upload(ctx, e.who, opts)
		if rep != nil {
			if o.json {
				writeJSON(e, rep)
			} else {
				fmt.Fprintf(e.stdout, "%s uploaded, %s\n", plural(rep.Recordings, "recording", ""), humanBytes(rep.Bytes))
				for _, c := range rep.Conflicts {
					fmt.Fprintf(e.stdout, "kept local: %s\n", c)
				}
			}
		}
		return err
	case "sync":
		rep, err := x.CatchUp(ctx)
		if rep != nil {
			if o.json {
				writeJSON(e, rep)
			} else {
				fmt.Fprintf(e.stdout, "%d added, %d removed, %d skipped (taken down or deleted here, or archived under another id)\n", rep.Added, rep.Removed, rep.Skipped)
			}
		}
		return err
	}
	return usagef("remote takes set, show, upload or sync, not %q", args[0])
}

// uploadDelayNote warns about a writing node's upload age past an hour
// (a configuration stored with the old default of 30 days keeps its
// value): until then a recording lives on this disk alone.
func uploadDelayNote(cfg *archive.RemoteConfig) string {
	if cfg == nil || cfg.S3.ReadOnly || cfg.UploadDelay() <= time.Hour {
		return ""
	}
	return fmt.Sprintf("a sealed recording stays on this disk alone for up to %s after its ingest (--upload-after %s; 30d was the default before 5m); 'remote set' without --upload-after uploads within minutes",
		units.FormatDuration(cfg.UploadDelay()), units.FormatDuration(cfg.UploadDelay()))
}

// startTier runs the tier's periodic work in a server until ctx ends: a
// writing node uploads sealed recordings, a read-only one catches up on
// the bucket, now and then every every. The returned func waits for it.
func startTier(ctx context.Context, x *replay.Archive, every time.Duration, log *slog.Logger) func() {
	if cfg, err := x.RemoteConfig(); err == nil {
		if note := uploadDelayNote(cfg); note != "" {
			log.Warn("remote upload", "note", note)
		}
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			tierPass(ctx, x, log)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return wg.Wait
}

// tierPass is one round of startTier's work.
func tierPass(ctx context.Context, x *replay.Archive, log *slog.Logger) {
	cfg, err := x.RemoteConfig()
	if err != nil || cfg == nil {
		return
	}
	if cfg.S3.ReadOnly {
		rep, err := x.CatchUp(ctx)
		if err != nil && ctx.Err() == nil {
			log.Error("remote catch-up", "err", err)
		} else if rep != nil && (rep.Added > 0 || rep.Removed > 0) {
			log.Info("remote catch-up", "added", rep.Added, "removed", rep.Removed)
		}
		return
	}
	rep, err := x.Upload(ctx, replay.Actor{Name: "scheduler", Role: replay.RoleAdmin}, archive.UploadOptions{})
	if err != nil && ctx.Err() == nil {
		log.Error("remote upload", "err", err)
	} else if rep != nil && rep.Recordings > 0 {
		log.Info("remote upload", "recordings", rep.Recordings, "bytes", rep.Bytes)
	}
	// Other writers' uploads.
	crep, err := x.CatchUp(ctx)
	if err != nil && ctx.Err() == nil {
		log.Error("remote catch-up", "err", err)
	} else if crep != nil && (crep.Added > 0 || crep.Removed > 0) {
		log.Info("remote catch-up", "added", crep.Added, "removed", crep.Removed)
	}
}
