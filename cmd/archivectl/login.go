// archivectl login: the owner's login link of the running server.

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"

	"github.com/replayarchive/replay/internal/ownerauth"
)

func cmdLogin() *command {
	var asJSON bool
	return &command{
		name: "login", args: "[--json]", summary: "print the owner's login link of the running server",
		help: `Prints the link that signs a browser tab in to the web page as the
archive's owner (admin), as 'archivectl serve' printed it at start: the
server's URL with the owner's secret after #login=. Only the owner can
read the secret (serve.secret, mode 0600), and the server must prove it
holds it before the link is printed. Fails when no server runs.`,
		access: noAccess,
		flags:  func(fs *flag.FlagSet) { fs.BoolVar(&asJSON, "json", false, "print {\"url\",\"login_url\"}") },
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) > 0 {
				return usagef("login takes no arguments")
			}
			rs, err := findServer(ctx, e)
			if err != nil {
				return err
			}
			if rs == nil {
				return fmt.Errorf("no server is running for %s: start 'archivectl serve'", e.archiveDir)
			}
			link := ownerauth.LoginURL(rs.endpoint.URL, rs.secret)
			if asJSON {
				return json.NewEncoder(e.stdout).Encode(map[string]string{"url": rs.endpoint.URL, "login_url": link})
			}
			fmt.Fprintln(e.stdout, link)
			return nil
		},
	}
}
