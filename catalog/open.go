package catalog

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Open opens the catalog that url names, so a node is configured with one
// string: a postgres:// or postgresql:// URL is a PostgreSQL database
// (several nodes may share it; the schema is made if missing), anything
// else a bbolt file path (created with mode 0600 if missing; one process).
// A URL of another scheme ("mysql://…") is refused rather than taken for a
// file name. Errors never hold the URL's password.
func Open(ctx context.Context, url string) (Catalog, error) {
	scheme, _, isURL := strings.Cut(url, "://")
	switch {
	case url == "":
		return nil, errors.New("catalog: open: empty catalog location (want a postgres:// URL or a file path)")
	case isURL && (strings.EqualFold(scheme, "postgres") || strings.EqualFold(scheme, "postgresql")):
		return openPostgres(ctx, url)
	case isURL && !strings.ContainsAny(scheme, `/\`):
		where, _ := redactURL(url)
		return nil, fmt.Errorf("catalog: open %s: unsupported scheme %q (want postgres:// or a file path)", where, scheme)
	}
	return openBolt(ctx, url)
}

// redactURL returns raw as it may be shown (scheme, user, host and path:
// no password, no query, which may hold one) and the secrets that must not
// be shown: the password of the user part and of a password= parameter.
// An unparsable URL is shown as its scheme only, and everything between
// "://" and the last "@" counts as secret.
func redactURL(raw string) (shown string, secrets []string) {
	u, err := url.Parse(raw)
	if err != nil {
		scheme, rest, _ := strings.Cut(raw, "://")
		if i := strings.LastIndex(rest, "@"); i >= 0 {
			userinfo := rest[:i]
			secrets = append(secrets, userinfo)
			if _, pw, ok := strings.Cut(userinfo, ":"); ok {
				secrets = append(secrets, pw)
			}
		}
		if q := strings.Index(rest, "password="); q >= 0 {
			pw, _, _ := strings.Cut(rest[q+len("password="):], "&")
			secrets = append(secrets, pw)
		}
		return scheme + "://(unparsable URL)", nonEmpty(secrets)
	}
	if pw, ok := u.User.Password(); ok {
		secrets = append(secrets, pw, url.PathEscape(pw), url.QueryEscape(pw))
	}
	for _, pw := range u.Query()["password"] {
		secrets = append(secrets, pw, url.QueryEscape(pw))
	}
	show := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}
	if u.User != nil {
		show.User = url.User(u.User.Username())
	}
	return show.String(), nonEmpty(secrets)
}

// nonEmpty drops the empty strings of s.
func nonEmpty(s []string) []string {
	out := s[:0]
	for _, x := range s {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}

// redactedError is an error whose message had secrets replaced; Unwrap
// still reaches the cause, for errors.Is.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// scrub returns err with every secret in its message replaced by "xxxxx".
func scrub(err error, secrets []string) error {
	msg := err.Error()
	clean := msg
	for _, s := range secrets {
		clean = strings.ReplaceAll(clean, s, "xxxxx")
	}
	if clean == msg {
		return err
	}
	return &redactedError{msg: clean, err: err}
}
