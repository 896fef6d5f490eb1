package blob_test

import (
	"strings"
	"testing"

	"github.com/replayarchive/replay/archive/blob"
)

func TestValidKey(t *testing.T) {
	for _, k := range []string{"a", "a/b", "rec/2026-01/x", "a.b", "a..b/c", strings.Repeat("k", 1024)} {
		if err := blob.ValidKey(k); err != nil {
			t.Errorf("ValidKey(%q) = %v", k, err)
		}
	}
	for _, k := range []string{"", "/a", "a/", "a//b", ".", "..", "a/../b", "./a", ".a", "a/.b", "a\\b", "a\x00", strings.Repeat("k", 1025)} {
		if err := blob.ValidKey(k); err == nil {
			t.Errorf("ValidKey(%q) = nil, want an error", k)
		}
	}
}

func TestParseURL(t *testing.T) {
	good := map[string][2]string{
		"s3://bucket":              {"bucket", ""},
		"s3://bucket/":             {"bucket", ""},
		"s3://my-bucket/replays":   {"my-bucket", "replays/"},
		"s3://b.example/a/b/":      {"b.example", "a/b/"},
		"s3://bucket/league/s2026": {"bucket", "league/s2026/"},
	}
	for raw, want := range good {
		b, p, err := blob.ParseURL(raw)
		if err != nil || b != want[0] || p != want[1] {
			t.Errorf("ParseURL(%q) = %q, %q, %v; want %q, %q", raw, b, p, err, want[0], want[1])
		}
	}
	for _, raw := range []string{"", "bucket/x", "http://bucket/x", "s3://", "s3://B_ad/x", "s3://bucket/a//b", "s3://bucket/../x",
		"s3://key:secret@bucket/x", "s3://bucket/x?region=y", "s3://bucket/.hidden"} {
		if b, p, err := blob.ParseURL(raw); err == nil {
			t.Errorf("ParseURL(%q) = %q, %q; want an error", raw, b, p)
		}
	}
}

// FuzzValidKey checks that a key ValidKey accepts stays inside its root:
// it never climbs out and never names an absolute path.
func FuzzValidKey(f *testing.F) {
	for _, s := range []string{"a/b", "../a", "a/./b", "/x", "a\\..\\b", "rec/2026-01/id", "a//b", "a.b/.c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		if blob.ValidKey(key) != nil {
			return
		}
		for _, seg := range strings.Split(key, "/") {
			if seg == "" || seg == "." || seg == ".." || seg[0] == '.' {
				t.Fatalf("ValidKey accepted %q with segment %q", key, seg)
			}
		}
		if strings.ContainsAny(key, "\\\x00") || strings.HasPrefix(key, "/") {
			t.Fatalf("ValidKey accepted %q", key)
		}
	})
}

// FuzzParseURL checks that ParseURL never panics and that what it accepts
// is a bucket and a valid key prefix.
func FuzzParseURL(f *testing.F) {
	for _, s := range []string{"s3://bucket/prefix", "s3://b/a/b/", "s3://x", "s3://b/../c", "s3://u:p@b/", "s3://b/%2e%2e/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		b, p, err := blob.ParseURL(raw)
		if err != nil {
			return
		}
		if b == "" {
			t.Fatalf("ParseURL(%q) accepted an empty bucket", raw)
		}
		if p != "" {
			if !strings.HasSuffix(p, "/") {
				t.Fatalf("ParseURL(%q) prefix %q does not end in '/'", raw, p)
			}
			if err := blob.ValidKey(strings.TrimSuffix(p, "/")); err != nil {
				t.Fatalf("ParseURL(%q) prefix %q: %v", raw, p, err)
			}
		}
	})
}
