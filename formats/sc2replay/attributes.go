// This file reads replay.attributes.events: the lobby's attribute values
// (race picked, difficulty, game mode, ...) per player slot. The layout is
// fixed, little-endian, and not described by the protocol tables.

package sc2replay

import (
	"encoding/binary"
	"fmt"
)

// attrRace is the attribute id of the race picked in the lobby; its value
// is "RAND", "Terr", "Prot" or "Zerg".
const attrRace = 3001

// attrGlobalScope is the scope of attributes that belong to no player.
const attrGlobalScope = 16

// attribute is one value of replay.attributes.events.
type attribute struct {
	id    uint32
	scope uint8 // slot index + 1, or attrGlobalScope
	value string
}

// parseAttributes decodes replay.attributes.events: an optional source byte
// (from base build 17326), the map namespace and a count, then 13-byte
// entries (namespace, id, scope, value as 4 bytes stored backwards and
// padded with NULs). The count is checked against the bytes present before
// anything is allocated.
func parseAttributes(b []byte, baseBuild int) ([]attribute, error) {
	off := 8
	if baseBuild >= 17326 {
		off = 9
	}
	if len(b) < off {
		return nil, fmt.Errorf("header of %d bytes cut short at %d", off, len(b))
	}
	n := binary.LittleEndian.Uint32(b[off-4:])
	if int64(n)*13 > int64(len(b)-off) {
		return nil, fmt.Errorf("%d attributes of 13 bytes in %d bytes", n, len(b)-off)
	}
	attrs := make([]attribute, 0, n)
	for i := 0; i < int(n); i++ {
		e := b[off+13*i : off+13*i+13]
		var v []byte
		for j := 12; j >= 9; j-- {
			if e[j] != 0 {
				v = append(v, e[j])
			}
		}
		attrs = append(attrs, attribute{id: binary.LittleEndian.Uint32(e[4:]), scope: e[8], value: string(v)})
	}
	return attrs, nil
}

// pickedRaces returns the race picked in the lobby per slot index, from the
// attributes, with English names ("Random" for "RAND").
func pickedRaces(attrs []attribute) map[int]string {
	names := map[string]string{"RAND": "Random", "Terr": "Terran", "Prot": "Protoss", "Zerg": "Zerg"}
	out := map[int]string{}
	for _, a := range attrs {
		if a.id != attrRace || a.scope == 0 || a.scope >= attrGlobalScope {
			continue
		}
		if n, ok := names[a.value]; ok {
			out[int(a.scope)-1] = n
		}
	}
	return out
}
