package teehistorian

import (
	"bytes"
	"reflect"
	"testing"
)

// checkParseCommon walks the records of a file and fails t where
// parseCommon reads a record differently from parseRecord. It returns how
// many records parseCommon read.
func checkParseCommon(t testing.TB, file []byte) int {
	t.Helper()
	rd, err := NewReader(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	hdr := rd.Header()
	body := file[len(hdr.Raw):]
	var st State
	st.Reset()
	var fast, slow Item // both have read every record before this one
	common := 0
	for off := len(hdr.Raw); len(body) > 0; {
		n, status, _, _ := parseRecord(body, &st, &slow, hdr.Version)
		if m := parseCommon(body, &st, &fast); m > 0 {
			common++
			if status != parseOK || m != n || !reflect.DeepEqual(fast, slow) {
				t.Fatalf("record at offset %d: parseCommon read %d bytes as %+v, parseRecord %d bytes (status %d) as %+v", off, m, fast, n, status, slow)
			}
		} else {
			parseRecord(body, &st, &fast, hdr.Version)
		}
		if status != parseOK || slow.Type == ItemFinish {
			break
		}
		apply(&st, &slow)
		body, off = body[n:], off+n
	}
	return common
}

// TestParseCommonCorpus: the corpus's files read the same through the
// common records' path.
func TestParseCommonCorpus(t *testing.T) {
	common := 0
	for name, file := range corpusFiles(t) {
		t.Run(name, func(t *testing.T) { common += checkParseCommon(t, file) })
	}
	if common < 1000 {
		t.Errorf("%d of the corpus's records went through parseCommon, want at least 1000", common)
	}
}

// TestParseCommonDeclines: records parseCommon must leave to parseRecord,
// which reads them (or refuses them) with the full checks.
func TestParseCommonDeclines(t *testing.T) {
	var st State
	st.Reset()
	st.Clients[2].Alive = true
	st.Clients[3].HasInput = true
	for _, tc := range []struct {
		name string
		tick int64
		rec  []byte
	}{
		{"PLAYER_DIFF of an absent player", 0, thRecords(1, 1, 1)},
		{"PLAYER_DIFF with a two-byte field", 0, thRecords(2, 100, 1)},
		{"PLAYER_DIFF cut short", 0, thRecords(2, 1)},
		{"PLAYER_DIFF past the last tick", maxTick, thRecords(2, 1, 1)},
		{"INPUT_DIFF of a client without input", 0, thRecords(wireInputDiff, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)},
		{"INPUT_DIFF with a two-byte field", 0, thRecords(wireInputDiff, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 500)},
		{"INPUT_DIFF cut short", 0, thRecords(wireInputDiff, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0)},
		{"INPUT_NEW", 0, thRecords(wireInputNew, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st.Tick, st.LastCid = tc.tick, 5
			var it Item
			if n := parseCommon(tc.rec, &st, &it); n != 0 || !reflect.DeepEqual(it, Item{}) {
				t.Errorf("parseCommon read %d bytes into %+v", n, it)
			}
		})
	}
}
