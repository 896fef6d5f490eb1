// This file models one Echo VR session API frame (GET /session, plus the
// optional GET /player_bones answer) with the API's own JSON field names.
// Numbers are float32 where the game and the reference library use float,
// so that encoding reproduces the reference writer's arithmetic.

package butter

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
)

// Frame is one API frame: the session JSON, the time it was fetched, and
// the bones JSON when it was recorded.
type Frame struct {
	// RecordedTime is when the frame was fetched (UTC wall clock).
	RecordedTime time.Time `json:"-"`
	// Bones is the /player_bones answer recorded with the frame, if any.
	Bones *Bones `json:"-"`

	ErrCode                  int        `json:"err_code"`
	ErrDescription           *string    `json:"err_description,omitempty"`
	Disc                     *Disc      `json:"disc,omitempty"`
	LastThrow                *LastThrow `json:"last_throw,omitempty"`
	SessionID                string     `json:"sessionid"`
	SessionIP                string     `json:"sessionip"`
	BlueTeamRestartRequest   Bool       `json:"blue_team_restart_request"`
	OrangeTeamRestartRequest Bool       `json:"orange_team_restart_request"`
	GameStatus               *string    `json:"game_status"`
	GameClock                float32    `json:"game_clock"`
	GameClockDisplay         string     `json:"game_clock_display"`
	MatchType                string     `json:"match_type"`
	MapName                  string     `json:"map_name"`
	PrivateMatch             Bool       `json:"private_match"`
	TournamentMatch          Bool       `json:"tournament_match"`
	BluePoints               float32    `json:"blue_points"`
	OrangePoints             float32    `json:"orange_points"`
	BlueRoundScore           int        `json:"blue_round_score"`
	OrangeRoundScore         int        `json:"orange_round_score"`
	TotalRoundCount          int        `json:"total_round_count"`
	Player                   *VRPlayer  `json:"player,omitempty"`
	Pause                    *Pause     `json:"pause,omitempty"`
	Possession               []int      `json:"possession,omitempty"`
	LeftShoulderPressed      Bool       `json:"left_shoulder_pressed"`
	RightShoulderPressed     Bool       `json:"right_shoulder_pressed"`
	LeftShoulderPressed2     Bool       `json:"left_shoulder_pressed2"`
	RightShoulderPressed2    Bool       `json:"right_shoulder_pressed2"`
	RulesChangedBy           *string    `json:"rules_changed_by,omitempty"`
	RulesChangedAt           int64      `json:"rules_changed_at"`
	ClientName               string     `json:"client_name"`
	LastScore                *LastScore `json:"last_score,omitempty"`
	Teams                    []*Team    `json:"teams"`
	Contested                Bool       `json:"contested"`
	PayloadMultiplier        float32    `json:"payload_multiplier"`
	PayloadCheckpoint        int        `json:"payload_checkpoint"`
	PayloadDistance          float32    `json:"payload_distance"`
	PayloadDefenders         int        `json:"payload_defenders"`
	PayloadSpeed             float32    `json:"payload_speed"`
}

// Disc is the disc's pose and motion.
type Disc struct {
	Position    []float32 `json:"position"`
	Forward     []float32 `json:"forward"`
	Left        []float32 `json:"left"`
	Up          []float32 `json:"up"`
	Velocity    []float32 `json:"velocity"`
	BounceCount int       `json:"bounce_count"`
}

// LastThrow describes the most recent throw.
type LastThrow struct {
	ArmSpeed                float32 `json:"arm_speed"`
	TotalSpeed              float32 `json:"total_speed"`
	OffAxisSpinDeg          float32 `json:"off_axis_spin_deg"`
	WristThrowPenalty       float32 `json:"wrist_throw_penalty"`
	RotPerSec               float32 `json:"rot_per_sec"`
	PotSpeedFromRot         float32 `json:"pot_speed_from_rot"`
	SpeedFromArm            float32 `json:"speed_from_arm"`
	SpeedFromMovement       float32 `json:"speed_from_movement"`
	SpeedFromWrist          float32 `json:"speed_from_wrist"`
	WristAlignToThrowDeg    float32 `json:"wrist_align_to_throw_deg"`
	ThrowAlignToMovementDeg float32 `json:"throw_align_to_movement_deg"`
	OffAxisPenalty          float32 `json:"off_axis_penalty"`
	ThrowMovePenalty        float32 `json:"throw_move_penalty"`
}

// LastScore describes the most recent goal.
type LastScore struct {
	DiscSpeed      float32 `json:"disc_speed"`
	Team           string  `json:"team"`
	GoalType       string  `json:"goal_type"`
	PointAmount    int     `json:"point_amount"`
	DistanceThrown float32 `json:"distance_thrown"`
	PersonScored   string  `json:"person_scored"`
	AssistScored   string  `json:"assist_scored"`
}

// VRPlayer is the recording client's own camera.
type VRPlayer struct {
	VRLeft     []float32 `json:"vr_left"`
	VRPosition []float32 `json:"vr_position"`
	VRForward  []float32 `json:"vr_forward"`
	VRUp       []float32 `json:"vr_up"`
}

// Pause is the pause state.
type Pause struct {
	PausedState         string  `json:"paused_state"`
	UnpausedTeam        string  `json:"unpaused_team"`
	PausedRequestedTeam string  `json:"paused_requested_team"`
	UnpausedTimer       float32 `json:"unpaused_timer"`
	PausedTimer         float32 `json:"paused_timer"`
}

// Team is one of the three teams (blue, orange, spectators).
type Team struct {
	Players    []*Player `json:"players,omitempty"`
	Team       string    `json:"team,omitempty"`
	Possession Bool      `json:"possession"`
	Stats      *Stats    `json:"stats,omitempty"`
}

// Stats are a team's or a player's counters.
type Stats struct {
	PossessionTime float32 `json:"possession_time"`
	Points         int     `json:"points"`
	Saves          int     `json:"saves"`
	Goals          int     `json:"goals"`
	Stuns          int     `json:"stuns"`
	Passes         int     `json:"passes"`
	Catches        int     `json:"catches"`
	Steals         int     `json:"steals"`
	Blocks         int     `json:"blocks"`
	Interceptions  int     `json:"interceptions"`
	Assists        int     `json:"assists"`
	ShotsTaken     int     `json:"shots_taken"`
}

// Player is one player in a team.
type Player struct {
	Name            string     `json:"name"`
	PlayerID        int        `json:"playerid"`
	UserID          int64      `json:"userid"`
	Number          int        `json:"number"`
	Level           int        `json:"level"`
	Ping            int        `json:"ping"`
	PacketLossRatio float32    `json:"packetlossratio"`
	Stunned         Bool       `json:"stunned"`
	Invulnerable    Bool       `json:"invulnerable"`
	Blocking        Bool       `json:"blocking"`
	IsEmotePlaying  Bool       `json:"is_emote_playing"`
	Possession      Bool       `json:"possession"`
	HoldingLeft     *string    `json:"holding_left,omitempty"`
	HoldingRight    *string    `json:"holding_right,omitempty"`
	Velocity        []float32  `json:"velocity"`
	Head            *Transform `json:"head,omitempty"`
	Body            *Transform `json:"body,omitempty"`
	LHand           *Transform `json:"lhand,omitempty"`
	RHand           *Transform `json:"rhand,omitempty"`
	Stats           *Stats     `json:"stats,omitempty"`
	Weapon          *string    `json:"Weapon,omitempty"`
	Ordnance        *string    `json:"Ordnance,omitempty"`
	TacMod          *string    `json:"TacMod,omitempty"`
	Arm             *string    `json:"Arm,omitempty"`
}

// Transform is a pose: hands use "pos", head and body "position".
type Transform struct {
	Pos      []float32 `json:"pos,omitempty"`
	Position []float32 `json:"position,omitempty"`
	Forward  []float32 `json:"forward"`
	Left     []float32 `json:"left"`
	Up       []float32 `json:"up"`
}

// Bones is the /player_bones answer.
type Bones struct {
	UserBones      []BonePlayer `json:"user_bones"`
	ErrorCode      int          `json:"error_code"`
	ErrDescription *string      `json:"err_description,omitempty"`
}

// BonePlayer holds one player's 23 bones: bone_t positions (x, y, z) and
// bone_o orientations (x, y, z, w).
type BonePlayer struct {
	BoneT []float32 `json:"bone_t"`
	BoneO []float32 `json:"bone_o"`
}

// Bool is a JSON boolean that also accepts the numbers (0, 1, 0.0, 1.0)
// some game versions write, as Newtonsoft.Json does.
type Bool bool

// UnmarshalJSON implements json.Unmarshaler.
func (b *Bool) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	switch string(data) {
	case "true":
		*b = true
		return nil
	case "false", "null":
		*b = false
		return nil
	}
	f, err := strconv.ParseFloat(string(data), 64)
	if err != nil {
		s, serr := strconv.Unquote(string(data))
		if serr != nil {
			return &json.UnmarshalTypeError{Value: string(data), Type: nil}
		}
		*b = s == "true" || s == "True" || s == "1"
		return nil
	}
	*b = f != 0
	return nil
}

// position returns the transform's position, preferring "pos" like the
// reference's Transform.Position.
func (t *Transform) position() vec3 {
	if t.Pos != nil {
		return vecOf(t.Pos)
	}
	return vecOf(t.Position)
}

// rotation returns the transform's orientation.
func (t *Transform) rotation() quat {
	return lookRotation(vecOf(t.Forward), vecOf(t.Up))
}

func (f *Frame) team(i int) *Team {
	if i < len(f.Teams) {
		return f.Teams[i]
	}
	return nil
}

// playerByUserID is the reference's Frame.GetPlayer(userid).
func (f *Frame) playerByUserID(id int64) *Player {
	if f == nil {
		return nil
	}
	for _, t := range f.Teams {
		if t == nil {
			continue
		}
		for _, p := range t.Players {
			if p.UserID == id {
				return p
			}
		}
	}
	return nil
}

func (f *Frame) inArena() bool { return f.MapName == arenaMap }

func (f *Frame) inCombat() bool { return isCombatMap(f.MapName) }

func isCombatMap(m string) bool {
	switch m {
	case "mpl_combat_fission", "mpl_combat_combustion", "mpl_combat_dyson", "mpl_combat_gauss":
		return true
	}
	return false
}

func strPtr(s string) *string { return &s }
