package ddnetmap

// Game layer tile indexes that a moderator reads a game against, as
// DDNet's src/game/mapitems.h numbers them (TILE_*). Other indexes are
// entities (spawns, weapons, lasers) or rarer controls.
const (
	TileAir         = 0  // TILE_AIR: nothing
	TileSolid       = 1  // TILE_SOLID: a wall tees collide with and hook
	TileDeath       = 2  // TILE_DEATH: kills
	TileNoHook      = 3  // TILE_NOHOOK: a wall that hooks do not hold on
	TileFreeze      = 9  // TILE_FREEZE: freezes for a few seconds
	TileUnfreeze    = 11 // TILE_UNFREEZE: ends a freeze
	TileDeepFreeze  = 12 // TILE_DFREEZE: freezes until deep unfreeze
	TileDeepUnfrz   = 13 // TILE_DUNFREEZE: ends a deep freeze
	TileStart       = 33 // TILE_START: the race starts here
	TileFinish      = 34 // TILE_FINISH: the race ends here
	TileCheckpoint0 = 35 // TILE_TIME_CHECKPOINT_FIRST
	TileCheckpoint9 = 59 // TILE_TIME_CHECKPOINT_LAST
)

// Kind is what a tile means to a moderator watching a game: the page
// gives each kind its own colour.
type Kind uint8

// The kinds of tile, in the order Kinds lists them.
const (
	KindAir Kind = iota
	KindSolid
	KindDeath
	KindNoHook
	KindFreeze
	KindUnfreeze
	KindDeepFreeze
	KindDeepUnfreeze
	KindStart
	KindFinish
	KindCheckpoint
	// KindOther is any other index: entities and rarer controls.
	KindOther
)

var kindNames = [...]string{"air", "solid", "death", "nohook", "freeze", "unfreeze", "deep_freeze", "deep_unfreeze", "start", "finish", "checkpoint", "other"}

// String names the kind as the API and the page name it.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "other"
}

// KindOf classifies a game layer tile index.
func KindOf(index byte) Kind {
	switch {
	case index == TileAir:
		return KindAir
	case index == TileSolid:
		return KindSolid
	case index == TileDeath:
		return KindDeath
	case index == TileNoHook:
		return KindNoHook
	case index == TileFreeze:
		return KindFreeze
	case index == TileUnfreeze:
		return KindUnfreeze
	case index == TileDeepFreeze:
		return KindDeepFreeze
	case index == TileDeepUnfrz:
		return KindDeepUnfreeze
	case index == TileStart:
		return KindStart
	case index == TileFinish:
		return KindFinish
	case index >= TileCheckpoint0 && index <= TileCheckpoint9:
		return KindCheckpoint
	}
	return KindOther
}

// Counts returns how many tiles of the layer are of each kind, indexed by
// Kind.
func (g *GameLayer) Counts() [KindOther + 1]int {
	var byIndex [256]int
	for _, t := range g.Tiles {
		byIndex[t]++
	}
	var c [KindOther + 1]int
	for i, n := range byIndex {
		c[KindOf(byte(i))] += n
	}
	return c
}
