package replay

import "testing"

// The archive never remembers a catalog URL's password.
func TestWithoutPassword(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://replay:s3cret@db.internal:5432/replay?sslmode=require": "postgres://replay@db.internal:5432/replay?sslmode=require",
		"postgres://replay@db.internal/replay":                             "postgres://replay@db.internal/replay",
		"/srv/catalog.db":                                                  "/srv/catalog.db",
	} {
		if got := withoutPassword(in); got != want {
			t.Errorf("withoutPassword(%q) = %q, want %q", in, got, want)
		}
	}
}
