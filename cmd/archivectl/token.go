// archivectl token: the API tokens a server accepts.

package main

import (
	"context"
	"flag"
	"fmt"
	"text/tabwriter"

	"github.com/replayarchive/replay"
)

// tokenOptions are the flags of archivectl token.
type tokenOptions struct {
	name string
	role string
	json bool
}

// AddFlags declares the flags on fs.
func (o *tokenOptions) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.name, "name", "", "the token's `NAME` (who holds it: shown in the audit log)")
	fs.StringVar(&o.role, "role", "", "`ROLE`: pusher, viewer, moderator or admin")
	fs.BoolVar(&o.json, "json", false, "print JSON")
}

func cmdToken() *command {
	o := new(tokenOptions)
	return &command{
		name: "token", args: "create --name NAME --role pusher|viewer|moderator|admin | ls [--json] | revoke NAME",
		summary: "create, list or revoke the API tokens of 'serve'",
		help: `A token is printed once, when it is created; the archive keeps only its
sha256. Send it as "Authorization: Bearer TOKEN". Roles: viewer (search,
show, frames, redacted clips), moderator (also flags, holds, takedowns),
admin (also original files, retention, prune, tokens, push); pusher may
only push a game server's growing files ('archivectl push', PUT
/api/v1/push/...) and reads nothing, for the token kept on a game
server's host. Once any token exists, a server serves no request without
one.`,
		access: writeAccess,
		flags:  o.AddFlags,
		run:    func(ctx context.Context, e *env, args []string) error { return runToken(ctx, e, o, args) },
	}
}

func runToken(ctx context.Context, e *env, o *tokenOptions, args []string) error {
	if len(args) == 0 {
		return usagef("token takes create, ls or revoke")
	}
	x, err := e.lib()
	if err != nil {
		return err
	}
	switch args[0] {
	case "create":
		if len(args) != 1 || o.name == "" || o.role == "" {
			return usagef("token create takes --name and --role")
		}
		role, err := replay.ParseRole(o.role)
		if err != nil {
			return usagef("--role: %v", err)
		}
		secret, err := x.CreateToken(e.who, o.name, role)
		if err != nil {
			return err
		}
		if o.json {
			return writeJSON(e, map[string]string{"name": o.name, "role": role.String(), "token": secret})
		}
		fmt.Fprintln(e.stdout, secret)
		fmt.Fprintf(e.stderr, "token %q (%s) created; it is shown only now\n", o.name, role)
		return nil
	case "ls":
		toks, err := x.Tokens()
		if err != nil {
			return err
		}
		if o.json {
			type tokenJSON struct {
				Name, Role, Created, CreatedBy string
			}
			out := []tokenJSON{}
			for _, t := range toks {
				out = append(out, tokenJSON{t.Name, t.Role, fmtTime(t.Created), t.CreatedBy})
			}
			return writeJSON(e, out)
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tROLE\tCREATED\tBY")
		for _, t := range toks {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Name, t.Role, fmtTime(t.Created), t.CreatedBy)
		}
		return tw.Flush()
	case "revoke":
		if len(args) != 2 {
			return usagef("token revoke takes a token name")
		}
		if err := x.RevokeToken(e.who, args[1]); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "revoked %s\n", args[1])
		return nil
	}
	return usagef("token takes create, ls or revoke, not %q", args[0])
}
