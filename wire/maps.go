package wire

import (
	"encoding/base64"
	"encoding/binary"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/formats/ddnetmap"
)

// Map is a stored map: the answer of POST /api/v1/maps (with Existed)
// and a line of `archivectl maps ls --json`. SHA256 and CRC are of the
// whole file, as a teehistorian header's map_sha256 and map_crc name it.
type Map struct {
	SHA256 string `json:"sha256"`
	CRC    string `json:"crc"`
	Size   int64  `json:"size"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
	// Existed says the archive held the map already: nothing changed.
	Existed bool `json:"existed,omitempty"`
	// NotShared, on a node of a shared catalog, says why the map stays
	// on this node (too large for the catalog).
	NotShared string `json:"not_shared,omitempty"`
}

// MapOf is a map's facts.
func MapOf(m replay.MapInfo) Map {
	return Map{SHA256: m.SHA256, CRC: m.CRC, Size: m.Size, Width: m.Width, Height: m.Height}
}

// MapAddOf is the answer to an add.
func MapAddOf(a *replay.MapAdded) Map {
	out := MapOf(a.MapInfo)
	out.Existed, out.NotShared = a.Existed, a.NotShared
	return out
}

// GameLayer is a map's game layer as the page draws it: the answer of
// GET /api/v1/maps/{sha256}/game and GET /api/v1/recordings/{id}/map.
// Each tile is a kind, not DDNet's tile index, so the page holds no
// per-format table: Kinds names them (Kinds[k] for kind k: "air",
// "solid", "death", "nohook", "freeze", "unfreeze", "deep_freeze",
// "deep_unfreeze", "start", "finish", "checkpoint", "other"). Runs is
// the tiles row by row from the top left, run-length encoded (a kind
// byte, then the run's length as a uvarint: LEB128, 7 bits a byte, low
// bits first) and base64-encoded: DDNet maps are mostly long runs of air
// and wall, so the 243,100 tiles of the Tutorial map are 23 KiB.
// TileSize is a tile's width in the recording's position units (32: a
// teehistorian position (x, y) is in tile (x/32, y/32)).
type GameLayer struct {
	SHA256   string   `json:"sha256"`
	Width    int      `json:"width"`
	Height   int      `json:"height"`
	TileSize int      `json:"tile_size"`
	Kinds    []string `json:"kinds"`
	Runs     string   `json:"runs"`
}

// GameLayerOf encodes m's game layer.
func GameLayerOf(m *ddnetmap.Map) GameLayer {
	kinds := make([]string, ddnetmap.KindOther+1)
	for k := range kinds {
		kinds[k] = ddnetmap.Kind(k).String()
	}
	var lut [256]byte
	for i := range lut {
		lut[i] = byte(ddnetmap.KindOf(byte(i)))
	}
	var runs []byte
	tiles := m.Game.Tiles
	for i := 0; i < len(tiles); {
		k := lut[tiles[i]]
		j := i + 1
		for j < len(tiles) && lut[tiles[j]] == k {
			j++
		}
		runs = append(runs, k)
		runs = binary.AppendUvarint(runs, uint64(j-i))
		i = j
	}
	return GameLayer{SHA256: m.SHA256Hex(), Width: m.Game.Width, Height: m.Game.Height, TileSize: 32,
		Kinds: kinds, Runs: base64.StdEncoding.EncodeToString(runs)}
}
