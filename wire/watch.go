package wire

// WatchRoom answers POST /api/v1/watch: a shared viewing of a recording
// that others join by its id (the page's link /r/RECORDING?watch=ID).
type WatchRoom struct {
	ID        string `json:"id"`
	Recording string `json:"recording"`
	// Link is the page's address of the room, relative to the server.
	Link string `json:"link"`
}

// WatchJoin answers POST /api/v1/watch/{id}/join: the participant id the
// caller's event stream and state posts name. It is a secret of the
// caller's, so a browser's EventSource, which sends no Authorization
// header, opens the stream with it alone.
type WatchJoin struct {
	Participant string `json:"participant"`
}

// WatchState is one event of a room's stream: where the shared viewing
// is and who is in it, as the receiving participant's role may see it.
type WatchState struct {
	Room      string `json:"room"`
	Recording string `json:"recording"`
	// Version grows by one with every change, so a client can tell a
	// repeated state from a new one.
	Version uint64  `json:"version"`
	Tick    int64   `json:"tick"`
	Speed   float64 `json:"speed"`
	Playing bool    `json:"playing"`
	// Controller names who has the controls ("" when nobody does); You is
	// the receiving participant's id and YouControl whether it has them.
	Controller   string             `json:"controller"`
	You          string             `json:"you"`
	YouControl   bool               `json:"you_control"`
	Participants []WatchParticipant `json:"participants"`
}

// WatchParticipant is one who watches, named as the receiver may see:
// a viewer sees everyone but itself under a pseudonym, as it sees no
// moderator's name elsewhere.
type WatchParticipant struct {
	Name     string `json:"name"`
	Role     string `json:"role"`
	Controls bool   `json:"controls,omitempty"`
	You      bool   `json:"you,omitempty"`
}

// WatchSet is the body of POST /api/v1/watch/{id}/state and …/take: the
// caller's participant id and, for state, what it changes (a field left
// out stays as it is).
type WatchSet struct {
	Participant string   `json:"participant"`
	Tick        *int64   `json:"tick,omitempty"`
	Speed       *float64 `json:"speed,omitempty"`
	Playing     *bool    `json:"playing,omitempty"`
}
