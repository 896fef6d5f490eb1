// archivectl share: signed, expiring links to one redacted clip, which
// anyone may download from 'serve' without a token (replay.ShareClip).

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/replayarchive/replay/internal/ownerauth"
	"github.com/replayarchive/replay/internal/units"
	"github.com/replayarchive/replay/wire"
)

// shareOptions are the flags of archivectl share.
type shareOptions struct {
	from, to    string
	expires     string
	base        string
	maxLifetime string
	disable     bool
	enable      bool
	json        bool
}

// AddFlags declares the flags on fs.
func (o *shareOptions) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.from, "from", "", "the clip's first `TICK` or offset (1m04s); default the start")
	fs.StringVar(&o.to, "to", "", "the clip's last `TICK` or offset; default the end")
	fs.StringVar(&o.expires, "expires", "", "how long the link works (`DURATION`: 24h, 3d); default the archive's maximum")
	fs.StringVar(&o.base, "base", "", "the server's `URL` as its users reach it, for the printed link (default: the running serve's)")
	fs.StringVar(&o.maxLifetime, "max-lifetime", "", "config: the longest a link may live (`DURATION`, at least 1m; default 7d)")
	fs.BoolVar(&o.disable, "disable", false, "config: refuse every link, old and new")
	fs.BoolVar(&o.enable, "enable", false, "config: let links work again")
	fs.BoolVar(&o.json, "json", false, "print JSON (the API's shapes)")
}

func cmdShare() *command {
	o := new(shareOptions)
	return &command{
		name: "share", args: "ID [--from T] [--to T] [--expires 24h] | ls | revoke LINK_ID | config [--max-lifetime 7d] [--disable|--enable] | rotate",
		summary: "make, list or revoke links to a redacted clip that need no token",
		help: `'share ID' prints a link, SERVER/s/TOKEN, to the clip of recording ID
from --from to --to, which anyone may download from 'serve' without a token
until it expires (--expires, at most the archive's maximum: 7 days unless
'share config --max-lifetime' says otherwise). The clip is redacted as a
viewer's is: the file's secrets never leave through a link. The link is
signed with a key kept in ARCHIVE/shares/ (mode 0600); it is shown only
now.

  share ls                  the links not yet expired (ids, ranges, first use)
  share revoke LINK_ID      refuse one link from now on
  share rotate              a new key: every link made so far is refused
  share config              show or set --max-lifetime, --disable, --enable

Every link made, first used and revoked is in the recording's history
('archivectl audit ID').`,
		access: writeAccess,
		flags:  o.AddFlags,
		run:    func(ctx context.Context, e *env, args []string) error { return runShare(ctx, e, o, args) },
	}
}

func runShare(_ context.Context, e *env, o *shareOptions, args []string) error {
	if len(args) == 0 {
		return usagef("share takes a recording ID, or ls, revoke, config or rotate")
	}
	x, err := e.lib()
	if err != nil {
		return err
	}
	switch args[0] {
	case "ls":
		if len(args) != 1 {
			return usagef("share ls takes no arguments")
		}
		ls, err := x.Shares()
		if err != nil {
			return err
		}
		out := []wire.Share{}
		for _, l := range ls {
			out = append(out, wire.ShareOf(l, ""))
		}
		if o.json {
			return writeJSON(e, map[string]any{"shares": out})
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "LINK\tRECORDING\tTICKS\tEXPIRES\tBY\tFIRST USE\tREVOKED")
		for _, s := range out {
			fmt.Fprintf(tw, "%s\t%s\t%d-%d\t%s\t%s\t%s\t%s\n", s.ID, s.Recording[:8], s.From, s.To, fmtTime(s.Expires), s.By, fmtTime(s.FirstUse), fmtTime(s.Revoked))
		}
		return tw.Flush()
	case "revoke":
		if len(args) != 2 {
			return usagef("share revoke takes one link id")
		}
		l, err := x.RevokeShare(e.who, args[1])
		if err != nil {
			return err
		}
		if o.json {
			return writeJSON(e, wire.ShareOf(l, ""))
		}
		fmt.Fprintf(e.stdout, "revoked link %s (recording %s, ticks %d-%d)\n", l.ID, l.Recording, l.From, l.To)
		return nil
	case "rotate":
		if len(args) != 1 {
			return usagef("share rotate takes no arguments")
		}
		n, err := x.RotateShareKey(e.who)
		if err != nil {
			return err
		}
		if o.json {
			return writeJSON(e, map[string]int{"revoked": n})
		}
		fmt.Fprintf(e.stdout, "new key: %s revoked\n", plural(n, "link", "links"))
		return nil
	case "config":
		if len(args) != 1 {
			return usagef("share config takes only flags")
		}
		if o.disable && o.enable {
			return usagef("--disable and --enable: one or the other")
		}
		c, err := x.ShareConfig()
		if err != nil {
			return err
		}
		if o.disable || o.enable || o.maxLifetime != "" {
			if o.maxLifetime != "" {
				d, err := units.ParseDuration(o.maxLifetime)
				if err != nil || d < time.Minute {
					return usagef("--max-lifetime %q: want a duration of at least 1m (7d, 36h)", o.maxLifetime)
				}
				c.MaxLifetime = d
			}
			if o.disable || o.enable {
				c.Disabled = o.disable
			}
			if err := x.SetShareConfig(e.who, c); err != nil {
				return err
			}
		}
		wc := wire.ShareConfigOf(c)
		if o.json {
			return writeJSON(e, wc)
		}
		state := "enabled"
		if !wc.Enabled {
			state = "disabled"
		}
		fmt.Fprintf(e.stdout, "shared links: %s, at most %s\n", state, wc.MaxLifetime)
		return nil
	}
	if len(args) != 1 {
		return usagef("share takes one recording ID (then ls, revoke, config and rotate are subcommands)")
	}
	rec, err := x.Recording(args[0])
	if err != nil {
		return err
	}
	from, to := int64(0), int64(-1)
	if o.from != "" {
		if from, err = rec.ParseFrom(o.from); err != nil {
			return usagef("--from: %v", err)
		}
	}
	if o.to != "" {
		if to, err = rec.ParseTick(o.to); err != nil {
			return usagef("--to: %v", err)
		}
	}
	var life time.Duration
	if o.expires != "" {
		if life, err = units.ParseDuration(o.expires); err != nil {
			return usagef("--expires: %v", err)
		}
	}
	l, err := x.ShareClip(e.who, rec.Manifest().ID.String(), from, to, life)
	if err != nil {
		return err
	}
	s := wire.ShareOf(l, serverURL(e, o.base))
	if o.json {
		return writeJSON(e, s)
	}
	if s.URL != "" {
		fmt.Fprintln(e.stdout, s.URL)
	} else {
		fmt.Fprintln(e.stdout, s.Path)
	}
	fmt.Fprintf(e.stderr, "link %s: ticks %d-%d of %s, redacted, until %s; shown only now (revoke: archivectl share revoke %s)\n",
		l.ID, l.From, l.To, l.Recording, fmtTime(l.Expires), l.ID)
	if s.URL == "" {
		fmt.Fprintln(e.stderr, "no server runs for this archive: prefix the path with its address (or give --base URL)")
	}
	return nil
}

// serverURL is the address printed links start with: base, or the running
// server's (its serve.json), or none.
func serverURL(e *env, base string) string {
	if base != "" {
		return strings.TrimRight(base, "/")
	}
	b, err := os.ReadFile(filepath.Join(e.archiveDir, ownerauth.EndpointFile))
	if err != nil {
		return ""
	}
	var ep ownerauth.Endpoint
	if json.Unmarshal(b, &ep) != nil {
		return ""
	}
	return strings.TrimRight(ep.URL, "/")
}
