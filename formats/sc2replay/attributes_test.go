// Tests for the replay.attributes.events reader.

package sc2replay

import (
	"encoding/binary"
	"strings"
	"testing"
)

// attrBytes builds replay.attributes.events (with the source byte) holding
// the given entries, claiming count of them.
func attrBytes(count uint32, entries ...attribute) []byte {
	b := []byte{0}
	b = binary.LittleEndian.AppendUint32(b, 999)
	b = binary.LittleEndian.AppendUint32(b, count)
	for _, e := range entries {
		b = binary.LittleEndian.AppendUint32(b, 999)
		b = binary.LittleEndian.AppendUint32(b, e.id)
		b = append(b, e.scope)
		v := []byte(e.value)
		for i := 3; i >= 0; i-- {
			if i < len(v) {
				b = append(b, v[i])
			} else {
				b = append(b, 0)
			}
		}
	}
	return b
}

func TestAttributes(t *testing.T) {
	b := attrBytes(3, attribute{attrRace, 1, "RAND"}, attribute{attrRace, 2, "Prot"}, attribute{500, 16, "Dflt"})
	a, err := parseAttributes(b, 80949)
	if err != nil || len(a) != 3 || a[2].value != "Dflt" {
		t.Fatalf("got %v, %v", a, err)
	}
	if p := pickedRaces(a); len(p) != 2 || p[0] != "Random" || p[1] != "Protoss" {
		t.Errorf("picked %v", p)
	}
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"count past the end", attrBytes(1 << 30), "1073741824 attributes of 13 bytes in 0 bytes"},
		{"cut header", []byte{0, 1, 2}, "cut short"},
	} {
		if _, err := parseAttributes(tc.data, 80949); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
}

// FuzzAttributes feeds arbitrary bytes to the attributes reader, which must
// fail cleanly and never allocate for entries it does not have.
func FuzzAttributes(f *testing.F) {
	f.Add(attrBytes(2, attribute{attrRace, 1, "RAND"}, attribute{attrRace, 2, "Zerg"}))
	f.Add(attrBytes(1 << 30))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, build := range []int{16939, 80949} {
			a, err := parseAttributes(b, build)
			if err == nil && len(a)*13 > len(b) {
				t.Fatalf("%d attributes from %d bytes", len(a), len(b))
			}
			pickedRaces(a)
		}
	})
}
