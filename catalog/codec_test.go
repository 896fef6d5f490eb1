package catalog

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// seedEntries are the fuzzer's valid starting points.
func seedEntries() []Entry {
	at := time.UnixMicro(1767225600123456).UTC()
	return []Entry{
		{Seq: 1, Kind: KindFlag, Key: "r1/spam", Value: []byte(`{"by":"mod"}`), Node: "n1", At: at},
		{Seq: 1 << 40, Kind: KindHold, Key: "r2", Deleted: true, Node: "", At: at},
		{Seq: 7, Kind: KindSetting, Key: "é/\U0010FFFF", Value: []byte{}, Node: "node-é", At: at},
	}
}

// FuzzDecode feeds arbitrary bytes to the bbolt store's decoders: they
// return an error or a value that encodes back to what decodes the same,
// and never panic. Its seed corpus runs with go test.
func FuzzDecode(f *testing.F) {
	for _, e := range seedEntries() {
		b := encodeEntry(e)
		f.Add(b)
		f.Add(b[:len(b)-1])
		f.Add(append(b, 0))
	}
	f.Add(encodeLease(lease{holder: "n1", until: time.Unix(1767225600, 5)}))
	f.Add([]byte{})
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		if e, err := decodeEntry(b); err == nil {
			again, err := decodeEntry(encodeEntry(e))
			if err != nil {
				t.Fatalf("decoded %+v, which does not decode once encoded: %v", e, err)
			}
			if again.Seq != e.Seq || again.Kind != e.Kind || again.Key != e.Key || !bytes.Equal(again.Value, e.Value) ||
				again.Deleted != e.Deleted || again.Node != e.Node || !again.At.Equal(e.At) {
				t.Fatalf("decoded %+v, then %+v", e, again)
			}
			if len(e.Value) > len(b) || len(e.Key) > len(b) {
				t.Fatalf("decoded more than %d bytes hold", len(b))
			}
			if e.Kind == "" || e.Key == "" || !utf8.ValidString(e.Key) || strings.ContainsRune(e.Key, 0) {
				t.Fatalf("decoded an entry named %q/%q", e.Kind, e.Key)
			}
		}
		if l, err := decodeLease(b); err == nil {
			again, err := decodeLease(encodeLease(l))
			if err != nil || again.holder != l.holder || !again.until.Equal(l.until) {
				t.Fatalf("decoded %+v, then %+v %v", l, again, err)
			}
		}
	})
}

func TestCodecRoundTrip(t *testing.T) {
	for _, e := range seedEntries() {
		got, err := decodeEntry(encodeEntry(e))
		if err != nil {
			t.Fatalf("%+v: %v", e, err)
		}
		if got.Seq != e.Seq || got.Kind != e.Kind || got.Key != e.Key || !bytes.Equal(got.Value, e.Value) ||
			got.Deleted != e.Deleted || got.Node != e.Node || !got.At.Equal(e.At) {
			t.Errorf("encoded %+v, decoded %+v", e, got)
		}
		if got.Deleted != (got.Value == nil) {
			t.Errorf("%+v: a live entry's value is never nil, a deletion's always", got)
		}
	}
}

func TestPrefixEnd(t *testing.T) {
	for _, tc := range []struct {
		prefix, end string
		ok          bool
	}{
		{"", "", false},
		{"a", "b", true},
		{"a/", "a0", true},
		{"é", "ê", true},
		{"\uD7FF", "\uE000", true},
		{"a\U0010FFFF", "b", true},
		{"\U0010FFFF\U0010FFFF", "", false},
	} {
		end, ok := prefixEnd(tc.prefix)
		if end != tc.end || ok != tc.ok {
			t.Errorf("prefixEnd(%q) = %q %v, want %q %v", tc.prefix, end, ok, tc.end, tc.ok)
		}
		if !ok {
			continue
		}
		// Every string with the prefix is below end; the prefix is not
		// one of them.
		for _, s := range []string{tc.prefix, tc.prefix + "\U0010FFFF\U0010FFFF", tc.prefix + "\x7f"} {
			if s >= end {
				t.Errorf("%q, which starts with %q, is not below %q", s, tc.prefix, end)
			}
		}
		if strings.HasPrefix(end, tc.prefix) {
			t.Errorf("end %q starts with %q", end, tc.prefix)
		}
	}
}

func TestRedactURL(t *testing.T) {
	for _, tc := range []struct{ url, shown string }{
		{"postgres://alice:s3cr%21t@db.example:5432/replay?sslmode=require&password=other", "postgres://alice@db.example:5432/replay"},
		{"postgres://db.example/replay?password=s3cr%21t", "postgres://db.example/replay"},
		{"postgres://alice:s3cr!t@db.example:bad port/replay", "postgres://(unparsable URL)"},
	} {
		shown, secrets := redactURL(tc.url)
		if shown != tc.shown {
			t.Errorf("redactURL(%q) shows %q, want %q", tc.url, shown, tc.shown)
		}
		err := scrub(&redactedError{msg: "failed: " + tc.url}, secrets)
		for _, secret := range []string{"s3cr!t", "s3cr%21t", "other"} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("scrubbed %q still holds %q", err, secret)
			}
		}
	}
}
