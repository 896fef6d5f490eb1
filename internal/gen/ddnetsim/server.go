// This file models the servers: DDNet releases and what their recorder
// writes (header keys, EX items, version_minor), server names and configs,
// and the header JSON itself.

package ddnetsim

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/google/uuid"
)

// serverVersion is one DDNet release and its recorder's features, from the
// spec's header key history and EX "since" columns.
type serverVersion struct {
	release string
	num     int // 11002 for 11.0.2
	version int // teehistorian version, 1 or 2
	minor   int // version_minor, -1 when the key is absent
}

var serverVersions = []serverVersion{
	{"11.0.2", 11002, 1, -1},
	{"11.4", 11040, 2, -1},
	{"12.8", 12080, 2, -1},
	{"13.2", 13020, 2, -1},
	{"14.2", 14020, 2, -1},
	{"15.5", 15050, 2, -1},
	{"15.6", 15060, 2, 2},
	{"16.0", 16000, 2, 3},
	{"16.2", 16020, 2, 4},
	{"17.4", 17040, 2, 6},
	{"18.3", 18030, 2, 8},
	{"18.9", 18090, 2, 9},
	{"19.4", 19040, 2, 12},
	{"19.6", 19060, 2, 17},
	{"19.8.2", 19082, 2, 19},
	{"19.9", 19090, 2, 22},
	{"20.0", 20000, 2, 22},
}

func (v serverVersion) ex() bool           { return v.version >= 2 }
func (v serverVersion) joinVer() bool      { return v.num >= 14000 }
func (v serverVersion) ddnetVer() bool     { return v.num >= 13020 }
func (v serverVersion) sha256() bool       { return v.num >= 11020 }
func (v serverVersion) prng() bool         { return v.num >= 13020 }
func (v serverVersion) playerTeam() bool   { return v.minor >= 2 }
func (v serverVersion) ready() bool        { return v.minor >= 3 }
func (v serverVersion) rejoin() bool       { return v.minor >= 5 }
func (v serverVersion) prevUUID() bool     { return v.minor >= 6 }
func (v serverVersion) nameFinish() bool   { return v.minor >= 8 }
func (v serverVersion) saveLoad() bool     { return v.num >= 14020 }
func (v serverVersion) clients128() bool   { return v.num >= 20000 }
func (v serverVersion) authOnChange() bool { return v.minor >= 22 || (v.num >= 17030 && v.num < 19060) }
func (v serverVersion) authInitOnly() bool { return v.num < 19060 }
func (v serverVersion) startTimeISO() bool { return v.version >= 2 }
func (v serverVersion) gitHash() string    { return hashHex("ddnet-"+v.release, 16) }
func (v serverVersion) serverStr() string {
	return fmt.Sprintf("0.6.4, %s (%s)", v.release, v.gitHash())
}
func (v serverVersion) carriesJoins() bool { return v.num >= 17030 && (v.num < 19060 || v.minor >= 22) }
func (v serverVersion) maxClients() int32 {
	return map[bool]int32{true: 128, false: 64}[v.clients128()]
}
func (v serverVersion) extMessages() bool   { return v.num >= 12000 }
func (v serverVersion) cameraInfo() bool    { return v.num >= 18090 }
func (v serverVersion) showDistance() bool  { return v.num >= 15000 }
func (v serverVersion) legacyMessage() bool { return v.num >= 11040 }

func hashHex(s string, n int) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])[:n]
}

// gameMode is what a server runs; it decides the map and the bots.
type gameMode struct {
	gameType string
	race     bool // DDRace: teams, finishes, saves, freeze
	maps     func(r *rand.Rand) string
	small    bool // small arena maps (ctf, dm)
}

var (
	modeDDRace = gameMode{"DDraceNetwork", true, raceMap, false}
	modeGores  = gameMode{"Gores", true, raceMap, false}
	modeCTF    = gameMode{"gCTF", false, func(r *rand.Rand) string { return pick(r, ctfMaps) }, true}
	modeDM     = gameMode{"DM", false, func(r *rand.Rand) string { return pick(r, dmMaps) }, true}
	modeBlock  = gameMode{"Block", false, func(r *rand.Rand) string { return "BlmapChill" + pick(r, []string{"", " 2", " 3"}) }, true}
)

func raceMap(r *rand.Rand) string {
	s := pick(r, mapWords)
	switch r.IntN(4) {
	case 0:
		s += fmt.Sprintf(" %d", 1+r.IntN(9))
	case 1:
		s += " " + pick(r, mapWords)
	}
	return s
}

// server is one simulated server process and the files it writes.
type server struct {
	ver      serverVersion
	mode     gameMode
	name     string
	port     int
	config   [][2]string
	tuning   [][2]string
	uuids    []string
	tz       *time.Location
	clock    time.Time // wall time of the next file's start
	prevGame string    // game uuid of the last file, "" after a start
}

func newServer(r *rand.Rand, k *Kind, start time.Time) *server {
	s := &server{}
	vs := k.versions()
	s.ver = vs[r.IntN(len(vs))]
	s.mode = k.modes[r.IntN(len(k.modes))]
	region := pick(r, regions)
	switch r.IntN(4) {
	case 0:
		s.name = fmt.Sprintf("DDNet %s - %s", region, pick(r, levels))
	case 1:
		s.name = fmt.Sprintf("DDNet %s%d [%s]", region, 1+r.IntN(12), s.mode.gameType)
	case 2:
		s.name = fmt.Sprintf("%s | %s #%d", pick(r, []string{"KoG", "Unique", "Tee Paradise", "Blockworld", "zCatch", "iF|City"}), region, 1+r.IntN(9))
	default:
		s.name = fmt.Sprintf("%s's %s server", makeName(r), strings.ToLower(s.mode.gameType))
	}
	s.port = 8303 + r.IntN(60)
	offsets := []int{0, 1, 2, 3, -5, -3, 8, 9, 10}
	off := offsets[r.IntN(len(offsets))]
	s.tz = time.FixedZone("", off*3600)
	s.clock = start.Add(time.Duration(r.IntN(86400)) * time.Second)
	s.config = makeConfig(r, s)
	s.tuning = [][2]string{{"gun_curvature", "0"}, {"gun_speed", "140000"}, {"shotgun_curvature", "0"}, {"shotgun_speed", "50000"}, {"shotgun_speeddiff", "0"}}
	if r.IntN(3) == 0 {
		s.tuning = s.tuning[:0]
	}
	s.uuids = uuidNames(s.ver)
	return s
}

// makeConfig lists config variables that differ from the default, the way
// WriteHeader does (never passwords); real servers have 5 to 40.
func makeConfig(r *rand.Rand, s *server) [][2]string {
	all := [][2]string{
		{"sv_name", s.name}, {"sv_port", fmt.Sprint(s.port)}, {"sv_map", ""},
		{"sv_register", pick(r, []string{"0", "1", "ipv4"})}, {"sv_max_clients", fmt.Sprint(pick(r, []int{16, 32, 48, 64}))},
		{"sv_max_clients_per_ip", fmt.Sprint(pick(r, []int{2, 4, 8, 64}))}, {"sv_tee_historian", "1"},
		{"sv_sixup", pick(r, []string{"0", "1"})}, {"sv_team", pick(r, []string{"0", "1", "3"})},
		{"sv_show_others_default", "1"}, {"sv_region_name", strings.ToLower(pick(r, regions))},
		{"sv_sql_servername", strings.ToLower(pick(r, regions))}, {"sv_high_bandwidth", "1"},
		{"sv_auto_demo_record", "1"}, {"sv_auto_demo_max", "0"}, {"sv_spamprotection", pick(r, []string{"0", "1"})},
		{"sv_vote_kick", pick(r, []string{"0", "1"})}, {"sv_vote_kick_bantime", fmt.Sprint(r.IntN(30))},
		{"sv_vote_spectate", "1"}, {"sv_vote_map", "1"}, {"sv_chat_penalty", "50"}, {"sv_chat_threshold", "1500"},
		{"sv_motd", "Welcome! Read the rules: no blocking, no fun-voting. Discord: example.org/" + randString(r, 6)},
		{"sv_hide_score", pick(r, []string{"0", "1"})}, {"sv_save_worse_scores", "0"}, {"sv_rescue", "1"},
		{"sv_solo_server", pick(r, []string{"0", "1"})}, {"sv_reserved_slots", fmt.Sprint(r.IntN(4))},
		{"sv_inactivekick_time", fmt.Sprint(pick(r, []int{0, 5, 10, 30}))}, {"sv_inactivekick", fmt.Sprint(r.IntN(3))},
		{"sv_scorelimit", fmt.Sprint(pick(r, []int{20, 400, 1000}))}, {"sv_timelimit", fmt.Sprint(r.IntN(30))},
		{"sv_spectator_slots", fmt.Sprint(r.IntN(60))}, {"sv_tournament_mode", pick(r, []string{"0", "1"})},
		{"sv_player_ready_mode", "1"}, {"sv_test_cmds", "1"}, {"sv_old_teleport_hook", "0"},
		{"sv_deepfly", "0"}, {"sv_endless_drag", "0"}, {"sv_teleport_hold_hook", "0"},
	}
	n := 5 + r.IntN(len(all)-4)
	head := all[:3]
	rest := append([][2]string(nil), all[3:]...)
	r.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
	out := append([][2]string(nil), head...)
	out = append(out, rest[:n-3]...)
	// Real headers keep config order mostly, with the values set at
	// runtime moved: shuffle a little.
	if r.IntN(2) == 0 {
		i, j := r.IntN(len(out)), r.IntN(len(out))
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// uuidNames lists the UUID names a server of version v registers, in
// registration order: protocol, teehistorian EX, game objects.
func uuidNames(v serverVersion) []string {
	if !v.ex() {
		return nil
	}
	var out []string
	add := func(ok bool, names ...string) {
		if ok {
			out = append(out, names...)
		}
	}
	add(true, "what-is@ddnet.tw", "it-is@ddnet.tw", "i-dont-know@ddnet.tw", "rcon-type@ddnet.tw", "map-details@ddnet.tw")
	add(v.num >= 15000, "capabilities@ddnet.tw", "clientver@ddnet.tw", "ping@ddnet.tw", "pong@ddnet.tw")
	add(v.num >= 15060, "checksum-request@ddnet.tw", "checksum-response@ddnet.tw", "checksum-error@ddnet.tw")
	add(v.num >= 17000, "redirect@ddnet.org")
	add(v.num >= 19000, "rcon-cmd-group-start@ddnet.org", "rcon-cmd-group-end@ddnet.org", "map-reload@ddnet.org", "reconnect@ddnet.org",
		"sv-maplist-add@ddnet.org", "sv-maplist-start@ddnet.org", "sv-maplist-end@ddnet.org")
	add(true, "teehistorian-test@ddnet.tw")
	add(v.ddnetVer(), "teehistorian-ddnetver-old@ddnet.tw", "teehistorian-ddnetver@ddnet.tw")
	add(true, "teehistorian-auth-init@ddnet.tw", "teehistorian-auth-login@ddnet.tw", "teehistorian-auth-logout@ddnet.tw")
	add(v.joinVer(), "teehistorian-joinver6@ddnet.tw", "teehistorian-joinver7@ddnet.tw")
	add(v.num >= 16020, "teehistorian-player-swap@ddnet.tw")
	add(v.saveLoad(), "teehistorian-save-success@ddnet.tw", "teehistorian-save-failure@ddnet.tw", "teehistorian-load-success@ddnet.tw", "teehistorian-load-failure@ddnet.tw")
	add(v.playerTeam(), "teehistorian-player-team@ddnet.tw", "teehistorian-team-practice@ddnet.tw")
	add(v.ready(), "teehistorian-player-ready@ddnet.tw")
	add(v.rejoin(), "teehistorian-rejoinver6@ddnet.org", "teehistorian-antibot@ddnet.org")
	add(v.nameFinish(), "teehistorian-player-name@ddnet.org", "teehistorian-player-finish@ddnet.org", "teehistorian-team-finish@ddnet.org")
	add(true, "my-own-object@heinrich5991.de", "character@netobj.ddnet.tw", "player@netobj.ddnet.tw", "gameinfo@netobj.ddnet.tw",
		"projectile@netobj.ddnet.tw", "laser@netobj.ddnet.tw")
	add(v.num >= 15000, "ddnet-projectile@netobj.ddnet.tw", "pickup@netobj.ddnet.tw")
	add(v.num >= 18000, "spectator-info@netobj.ddnet.org", "spectator-count@netobj.ddnet.org", "birthday@netevent.ddnet.org", "finish@netevent.ddnet.org")
	add(true, "my-own-event@heinrich5991.de", "spec-char@netobj.ddnet.tw", "switch-state@netobj.ddnet.tw", "entity-ex@netobj.ddnet.tw")
	add(v.num >= 18000, "map-best-time@netobj.ddnet.org", "map-sound-world@netevent.ddnet.org")
	add(true, "my-own-message@heinrich5991.de", "show-distance@netmsg.ddnet.tw", "showothers@netmsg.ddnet.tw")
	add(v.num >= 18090, "camera-info@netmsg.ddnet.org")
	add(true, "teamsstate@netmsg.ddnet.tw", "ddrace-time@netmsg.ddnet.tw", "record@netmsg.ddnet.tw", "killmsgteam@netmsg.ddnet.tw")
	add(v.num >= 17000, "yourvote@netmsg.ddnet.org")
	add(v.num >= 18000, "racefinish@netmsg.ddnet.org", "commandinfo@netmsg.ddnet.org", "commandinfo-remove@netmsg.ddnet.org",
		"sv-vote-option-group-start@netmsg.ddnet.org", "sv-vote-option-group-end@netmsg.ddnet.org",
		"sv-commandinfo-group-start@netmsg.ddnet.org", "sv-commandinfo-group-end@netmsg.ddnet.org",
		"change-info-cooldown@netmsg.ddnet.org", "map-sound-global@netmsg.ddnet.org")
	add(v.num >= 19000, "preinput@netmsg.ddnet.org", "save-code@netmsg.ddnet.org", "server-alert@netmsg.ddnet.org",
		"moderator-alert@netmsg.ddnet.org", "enable-spectator-count@netmsg.ddnet.org", "map-info@netmsg.ddnet.org")
	add(true, "mapitemtype-test@ddnet.tw", "mapitemtype-automapper-config@ddnet.tw")
	add(v.num >= 16000, "mapitemtype-envpoints-bezier@ddnet.tw")
	return out
}

// mapFacts derives a map's size, crc and sha256 from its name, so that a
// map has the same identity in every file that loads it.
func mapFacts(name string, small bool) (size int, crc, sum string) {
	h := sha256.Sum256([]byte("map:" + name))
	size = 20000 + int(h[0])<<12 + int(h[1])<<4
	if small {
		size = 4000 + int(h[0])<<6
	}
	crc = fmt.Sprintf("%08x", crc32.ChecksumIEEE(h[:]))
	return size, crc, hex.EncodeToString(h[:])
}

// headerJSON writes the header as a server of version v would: key order,
// string values (numbers in version 1), the start time's format, optional
// keys by release.
func (s *server) headerJSON(r *rand.Rand, gameUUID uuid.UUID, mapName string, start time.Time) []byte {
	v := s.ver
	b := []byte{'{'}
	kv := func(k, val string, quoted bool) {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = appendJSON(b, k)
		b = append(b, ':')
		if quoted {
			b = appendJSON(b, val)
		} else {
			b = append(b, val...)
		}
	}
	size, crc, sum := mapFacts(mapName, s.mode.small)
	kv("comment", "teehistorian@ddnet.tw", true)
	kv("version", fmt.Sprint(v.version), true)
	if v.minor >= 0 {
		kv("version_minor", fmt.Sprint(v.minor), true)
	}
	kv("game_uuid", gameUUID.String(), true)
	if v.prevUUID() && s.prevGame != "" {
		kv("prev_game_uuid", s.prevGame, true)
	}
	if v.num >= 11040 {
		kv("server_version", v.serverStr(), true)
	} else {
		kv("server_version", "0.6.4, "+v.release, true)
	}
	t := start.In(s.tz)
	if v.startTimeISO() {
		kv("start_time", t.Format("2006-01-02T15:04:05-0700"), true)
	} else {
		kv("start_time", t.Format("2006-01-02 15:04:05 -0700"), true)
	}
	kv("server_name", s.name, true)
	kv("server_port", fmt.Sprint(s.port), v.version >= 2)
	kv("game_type", s.mode.gameType, true)
	kv("map_name", mapName, true)
	kv("map_size", fmt.Sprint(size), v.version >= 2)
	if v.sha256() {
		kv("map_sha256", sum, true)
	}
	kv("map_crc", crc, true)
	if v.prng() {
		kv("prng_description", fmt.Sprintf("pcg-xsh-rr:%016x:%016x", r.Uint64(), r.Uint64()|1), true)
	}
	obj := func(name string, ps [][2]string) {
		b = append(b, ',')
		b = appendJSON(b, name)
		b = append(b, ':', '{')
		for i, p := range ps {
			if i > 0 {
				b = append(b, ',')
			}
			val := p[1]
			if p[0] == "sv_map" {
				val = mapName
			}
			b = appendJSON(b, p[0])
			b = append(b, ':')
			b = appendJSON(b, val)
		}
		b = append(b, '}')
	}
	obj("config", s.config)
	obj("tuning", s.tuning)
	if v.ex() {
		b = append(b, `,"uuids":[`...)
		for i, u := range s.uuids {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSON(b, u)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// appendJSON escapes like DDNet's EscapeJson.
func appendJSON(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\t':
			b = append(b, '\\', 't')
		case c < 0x20:
			b = append(b, fmt.Sprintf("\\u%04x", c)...)
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
