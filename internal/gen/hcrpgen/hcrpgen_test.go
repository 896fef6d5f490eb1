package hcrpgen

import (
	"bytes"
	"testing"

	"github.com/Tnze/go-mc/nbt"

	"github.com/replayarchive/replay/formats/hcrp"
)

// TestResetReasons checks that resetReasons is how many reasons hcrp names:
// the last is "relog" and the next one is unnamed.
func TestResetReasons(t *testing.T) {
	if got := hcrp.ResetReason(resetReasons - 1).String(); got != "relog" {
		t.Errorf("reason %d is %q, want relog", resetReasons-1, got)
	}
	if got := hcrp.ResetReason(resetReasons).String(); got == "" || got[0] < '0' || got[0] > '9' {
		t.Errorf("reason %d is named %q: hcrp has more reasons than resetReasons", resetReasons, got)
	}
}

// TestFeatherNBT checks that featherNBT decodes, as a network compound, to
// the item it names.
func TestFeatherNBT(t *testing.T) {
	var item struct {
		ID    string `nbt:"id"`
		Count int32  `nbt:"count"`
	}
	dec := nbt.NewDecoder(bytes.NewReader([]byte(featherNBT)))
	dec.NetworkFormat(true)
	if _, err := dec.Decode(&item); err != nil {
		t.Fatal(err)
	}
	if item.ID != "minecraft:feather" || item.Count != 1 {
		t.Fatalf("featherNBT holds %+v", item)
	}
}
