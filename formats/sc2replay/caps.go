package sc2replay

// CanClip reports false: a replay is replayed by the game from its start,
// and a cut-down event stream would not replay the same game.
func (*Codec) CanClip() bool { return false }
