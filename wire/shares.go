package wire

import (
	"time"

	"github.com/replayarchive/replay"
)

// ShareRequest is the body of POST /api/v1/recordings/{id}/shares: the
// clip's range (ticks, or offsets such as "1m04s") and how long the link
// lives ("24h", "7d"; empty: the archive's maximum).
type ShareRequest struct {
	From    string `json:"from"`
	To      string `json:"to"`
	Expires string `json:"expires,omitempty"`
}

// Share is a shared link as the API and 'archivectl share --json' show
// it. Token, Path and URL are only in the answer that made the link: the
// archive keeps no copy of the token.
type Share struct {
	ID        string    `json:"id"`
	Recording string    `json:"recording"`
	From      int64     `json:"from"`
	To        int64     `json:"to"`
	Created   time.Time `json:"created"`
	Expires   time.Time `json:"expires"`
	By        string    `json:"by,omitempty"`
	FirstUse  time.Time `json:"first_use,omitzero"`
	Revoked   time.Time `json:"revoked,omitzero"`
	Token     string    `json:"token,omitempty"`
	Path      string    `json:"path,omitempty"`
	URL       string    `json:"url,omitempty"`
}

// ShareOf is link l as the API shows it; base (a server's URL, may be
// empty) makes its URL absolute when the token is known.
func ShareOf(l replay.ShareLink, base string) Share {
	s := Share{ID: l.ID, Recording: l.Recording.String(), From: l.From, To: l.To, Created: l.Created, Expires: l.Expires,
		By: l.By, FirstUse: l.FirstUse, Revoked: l.Revoked}
	if l.Token != "" {
		s.Token, s.Path = l.Token, SharePath(l.Token)
		if base != "" {
			s.URL = base + s.Path
		}
	}
	return s
}

// SharePath is where a server serves the clip a link's token grants.
func SharePath(token string) string { return "/s/" + token }

// ShareConfig is GET and PUT /api/v1/shares/config: whether links work,
// and the longest they may live (a duration such as "7d" or "36h"; in
// answers, as Go prints it, with max_lifetime_seconds).
type ShareConfig struct {
	Enabled            bool   `json:"enabled"`
	MaxLifetime        string `json:"max_lifetime"`
	MaxLifetimeSeconds int64  `json:"max_lifetime_seconds,omitempty"`
}

// ShareConfigOf is c as the API shows it.
func ShareConfigOf(c replay.ShareConfig) ShareConfig {
	d := c.MaxLifetime
	if d <= 0 {
		d = replay.DefaultShareMaxLifetime
	}
	return ShareConfig{Enabled: !c.Disabled, MaxLifetime: d.String(), MaxLifetimeSeconds: int64(d / time.Second)}
}
