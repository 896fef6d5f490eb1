// This file accepts the 2018 shape of the session API. Until Echo VR's
// late-2018 API change a player carried one pose at its top level
// ("position", "forward", "left", "up": the head) and its hands as bare
// [x, y, z] positions ("lhand", "rhand"), with no "head" or "body" object;
// the disc had only "position", "velocity" and "bounce_count". Spark
// recorded both shapes over the years. Both decode to the same Frame, so
// a 2018 recording converts to .butter exactly like a recent one.
//
// Today's shape decodes straight into Frame with no custom unmarshaler
// (the hot path of every .echoreplay ingest). A 2018 frame fails that
// decode with "cannot unmarshal array"; ParseFrame then rewrites it into
// today's shape and decodes again, so only old frames pay for the shape.

package butter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// ParseFrame parses one session API JSON object, in today's shape or the
// 2018 one. A disc without orientation (2018) gets the identity.
func ParseFrame(b []byte) (*Frame, error) {
	f := new(Frame)
	err := json.Unmarshal(b, f)
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Value == "array" {
		up, uerr := upgrade2018(b)
		if uerr != nil {
			return nil, fmt.Errorf("2018 API shape: %w", uerr)
		}
		f = new(Frame)
		err = json.Unmarshal(up, f)
	}
	if err != nil {
		return nil, err
	}
	if d := f.Disc; d != nil && d.Position != nil && d.Forward == nil && d.Left == nil && d.Up == nil {
		d.Forward, d.Left, d.Up = identity()
	}
	return f, nil
}

// identity returns the identity orientation (fresh slices each call),
// used where the 2018 shape gives a position without one (hands, the
// disc): .butter stores a rotation for every pose, and an all-zero basis
// would encode as NaN.
func identity() (forward, left, up []float32) {
	return []float32{0, 0, 1}, []float32{1, 0, 0}, []float32{0, 1, 0}
}

// upgrade2018 rewrites a 2018-shape session JSON object into today's
// shape. Numbers are carried as their original text (json.Number), so the
// float32 values decoded from the result are the source's.
func upgrade2018(b []byte) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, err
	}
	teams, _ := m["teams"].([]any)
	for ti, t := range teams {
		tm, _ := t.(map[string]any)
		players, _ := tm["players"].([]any)
		for pi, p := range players {
			pm, ok := p.(map[string]any)
			if !ok {
				continue
			}
			if err := upgradePlayer(pm); err != nil {
				return nil, fmt.Errorf("teams[%d].players[%d].%w", ti, pi, err)
			}
		}
	}
	return json.Marshal(m)
}

// upgradePlayer turns [x, y, z] transforms into objects and a top-level
// pose into "head" and "body".
func upgradePlayer(pm map[string]any) error {
	for _, k := range []string{"lhand", "rhand", "head", "body"} {
		a, ok := pm[k].([]any)
		if !ok {
			continue
		}
		if len(a) != 3 {
			return fmt.Errorf("%s: expected an [x, y, z] position, got %d values", k, len(a))
		}
		key := "position"
		if k == "lhand" || k == "rhand" {
			key = "pos" // the API's name for a hand's position
		}
		pm[k] = pose(key, a, nil)
	}
	if pos, ok := pm["position"].([]any); ok {
		for _, k := range []string{"head", "body"} {
			if pm[k] == nil {
				pm[k] = pose("position", pos, pm)
			}
		}
		for _, k := range []string{"position", "forward", "left", "up"} {
			delete(pm, k)
		}
	}
	return nil
}

// pose is a transform object holding pos under key, oriented by from's
// "forward", "left" and "up" when it has all three, else the identity.
func pose(key string, pos []any, from map[string]any) map[string]any {
	f, l, u := identity()
	t := map[string]any{key: pos, "forward": f, "left": l, "up": u}
	fw, fok := from["forward"].([]any)
	lf, lok := from["left"].([]any)
	up, uok := from["up"].([]any)
	if fok && lok && uok && len(fw) == 3 && len(lf) == 3 && len(up) == 3 {
		t["forward"], t["left"], t["up"] = fw, lf, up
	}
	return t
}
