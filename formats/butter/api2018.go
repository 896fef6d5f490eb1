// This file accepts the 2018 shape of the session API. Until Echo VR's
// late-2018 API change a player carried one pose at its top level
// ("position", "forward", "left", "up": the head) and its hands as bare
// [x, y, z] positions ("lhand", "rhand"), with no "head" or "body" object;
// the disc had only "position", "velocity" and "bounce_count". Spark
// recorded both shapes over the years. Both decode to the same Frame, so
// a 2018 recording converts to .butter exactly like a recent one.

package butter

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// identity returns the identity orientation (fresh slices each call),
// used where the 2018 shape gives a position without one (hands, the
// disc): .butter stores a rotation for every pose, and an all-zero basis
// would encode as NaN.
func identity() (forward, left, up []float32) {
	return []float32{0, 0, 1}, []float32{1, 0, 0}, []float32{0, 1, 0}
}

// UnmarshalJSON implements json.Unmarshaler: "head", "body", "lhand" and
// "rhand" may be objects (today's API) or [x, y, z] arrays (2018), and a
// 2018 player's top-level pose becomes its head and body.
func (p *Player) UnmarshalJSON(b []byte) error {
	type plain Player // without this method
	var aux struct {
		plain
		// the shallower fields win over plain's, so the transforms
		// arrive raw and either shape can be read
		Head  json.RawMessage `json:"head"`
		Body  json.RawMessage `json:"body"`
		LHand json.RawMessage `json:"lhand"`
		RHand json.RawMessage `json:"rhand"`
		// the 2018 top-level pose
		Position []float32 `json:"position"`
		Forward  []float32 `json:"forward"`
		Left     []float32 `json:"left"`
		Up       []float32 `json:"up"`
	}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	*p = Player(aux.plain)
	var err error
	if p.Head, err = transformOf(aux.Head, false, "head"); err != nil {
		return err
	}
	if p.Body, err = transformOf(aux.Body, false, "body"); err != nil {
		return err
	}
	if p.LHand, err = transformOf(aux.LHand, true, "lhand"); err != nil {
		return err
	}
	if p.RHand, err = transformOf(aux.RHand, true, "rhand"); err != nil {
		return err
	}
	if aux.Position != nil {
		if p.Head == nil {
			p.Head = topLevelPose(aux.Position, aux.Forward, aux.Left, aux.Up)
		}
		if p.Body == nil {
			p.Body = topLevelPose(aux.Position, aux.Forward, aux.Left, aux.Up)
		}
	}
	return nil
}

// transformOf reads a pose given as an object or, in the 2018 shape, as a
// bare [x, y, z] position (hand selects "pos" over "position", as the
// API names a hand's position). Absent or null is nil.
func transformOf(raw json.RawMessage, hand bool, name string) (*Transform, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] != '[' {
		t := new(Transform)
		if err := json.Unmarshal(raw, t); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return t, nil
	}
	var pos []float32
	if err := json.Unmarshal(raw, &pos); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(pos) != 3 {
		return nil, fmt.Errorf("%s: expected an [x, y, z] position, got %d numbers", name, len(pos))
	}
	t := new(Transform)
	t.Forward, t.Left, t.Up = identity()
	if hand {
		t.Pos = pos
	} else {
		t.Position = pos
	}
	return t, nil
}

// topLevelPose is a 2018 player's one pose, as a fresh Transform (head
// and body must not share slices); a missing orientation is the identity.
func topLevelPose(pos, forward, left, up []float32) *Transform {
	t := &Transform{Position: clone(pos)}
	t.Forward, t.Left, t.Up = identity()
	if len(forward) == 3 && len(left) == 3 && len(up) == 3 {
		t.Forward, t.Left, t.Up = clone(forward), clone(left), clone(up)
	}
	return t
}

func clone(v []float32) []float32 { return append([]float32(nil), v...) }

// UnmarshalJSON implements json.Unmarshaler: a 2018 disc has no
// orientation, which reads as the identity.
func (d *Disc) UnmarshalJSON(b []byte) error {
	type plain Disc
	if err := json.Unmarshal(b, (*plain)(d)); err != nil {
		return err
	}
	if d.Forward == nil && d.Left == nil && d.Up == nil && d.Position != nil {
		d.Forward, d.Left, d.Up = identity()
	}
	return nil
}
