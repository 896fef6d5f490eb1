// This file makes up the people, maps and servers of the simulation: word
// lists and the population of players a network of servers sees again and
// again (regulars recur across files, as on real servers).

package ddnetsim

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

var (
	nameWords = []string{"nameless tee", "brainless tee", "Tee", "Pro", "Noob", "Kitty", "Fox", "Wolf", "Shadow", "Ghost", "Ninja",
		"Pixel", "Bunny", "Lemon", "Mango", "Sky", "Storm", "Frost", "Blaze", "Zero", "Nova", "Luna", "Sol", "Rex", "Max",
		"Jumper", "Hooker", "Gores", "Speedy", "Lazy", "Happy", "Sad", "Cool", "Dark", "Light", "Red", "Blue", "Green",
		"Milk", "Cookie", "Panda", "Tiger", "Dragon", "Bob", "Alice", "Kit", "Ace", "Jinx", "Echo", "Fuzzy", "Tux"}
	nameDecor  = []string{"", "", "", "", "_", ".", "*", "'", "~", "xX", "|", "[", "ツ", "ღ", "•", "™", "ł", "ø"}
	clans      = []string{"", "", "", "", "", "KoG", "Sushi", "DDNet", "[ friends ]", "Legacy™", "TeeS", "GoRes", "Team X", "Blockers", "FNG", "Cats", "uwu", "404", "NoName", "Ω"}
	skins      = []string{"default", "bluekitty", "bluestripe", "brownbear", "cammo", "cammostripes", "coala", "limekitty", "pinky", "redbopp", "redstripe", "saddo", "toptri", "twinbop", "twintri", "warpaint", "kitty_cammo", "glowfox", "santa_default", "x_ninja"}
	skinParts7 = [][]string{
		{"standard", "kitty", "bear", "koala", "mouse", "raccoon"},
		{"", "duodonny", "stripes", "cammo", "whisker", "twinbelly"},
		{"", "", "hair", "horns", "unibop"},
		{"standard", "mouse", "bear", "kitty"},
		{"standard", "cammo"},
		{"standard", "colorable", "negative"},
	}
	mapWords = []string{"Kobra", "Sunny", "Grandma", "Stronghold", "Lightsout", "Pandora", "Jungle", "Baby Aim", "Multeasymap",
		"Copy Love Box", "Aim 10", "Just2Dummy", "Tutorial", "Gold Mine", "Cavern", "Skyline", "Frozen", "Lava", "Marble",
		"Cloud", "Harbour", "Desert", "Neon", "Retro", "Mayhem", "Tiny", "Moon", "Run", "Climb", "Tower", "Vortex"}
	ctfMaps = []string{"ctf1", "ctf2", "ctf3", "ctf4", "ctf5", "ctf5_spikes", "ctf6", "ctf7", "ctf_cryptic", "ctf_duskwood"}
	dmMaps  = []string{"dm1", "dm2", "dm6", "dm7", "dm8", "dm9", "dm_bloody", "dm_pit"}
	regions = []string{"GER", "GER2", "GER10", "FRA", "POL", "RUS", "USA", "CAN", "BRA", "CHL", "CHN", "KOR", "SGP", "AUS", "ZAF", "IRN", "TUR"}
	levels  = []string{"Novice", "Moderate", "Brutal", "Insane", "Dummy", "Solo", "Race", "Oldschool", "DDmaX", "Fun", "Event"}
	// authNames are rcon account names as servers configure them.
	authNames = []string{"default_admin", "default_mod", "default_helper", "admin", "mod1", "mod2", "helper", "owner"}
	// dropReasons are DROP reasons as clients and the engine give them.
	dropReasons = []string{"", "", "", "", "", "", "Timeout", "Timeout", "leaving", "too many connections in ban list",
		"Kicked (spam)", "Kicked by vote", "rage quit", "bye", "Connection reset"}
)

// identity is one person of the network's population.
type identity struct {
	name, clan, skin string
	country          int32
	client           int // index into clientVersions
	proto7           bool
	timeout          string
	sens             float64 // mouse step per unit: 1, 2 or 3
	flagsBase        int32   // PlayerFlags while playing
	customColor      bool
	bodyColor        int32
	feetColor        int32
	authLevel        int32 // 0 none, 1 helper, 2 mod, 3 admin
	authName         string
	skill            float64 // 0..1: how well the bot races
	activity         float64 // 0..1: how busy the mouse and keys are
}

const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

func randString(r *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alnum[r.IntN(len(alnum))]
	}
	return string(b)
}

func pick[T any](r *rand.Rand, s []T) T { return s[r.IntN(len(s))] }

// makeName builds a tee name of at most 15 bytes, DDNet's limit.
func makeName(r *rand.Rand) string {
	var s string
	switch r.IntN(6) {
	case 0:
		s = pick(r, nameWords) + pick(r, nameWords)
	case 1:
		s = strings.ToLower(pick(r, nameWords)) + fmt.Sprint(r.IntN(1000))
	case 2:
		d := pick(r, nameDecor)
		s = d + pick(r, nameWords) + d
	case 3:
		s = randString(r, 3+r.IntN(6))
	default:
		s = pick(r, nameWords)
		if r.IntN(2) == 0 {
			s += fmt.Sprint(r.IntN(100))
		}
	}
	for len(s) > 15 {
		_, sz := lastRune(s)
		s = s[:len(s)-sz]
	}
	return s
}

func lastRune(s string) (rune, int) {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i]&0xc0 != 0x80 {
			return rune(s[i]), len(s) - i
		}
	}
	return 0, 1
}

// population returns n identities of a network; the same seed gives the
// same people, so regulars recur across the files of a data set.
func population(seed uint64, n int) []identity {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	out := make([]identity, n)
	for i := range out {
		id := identity{
			name:      makeName(r),
			clan:      pick(r, clans),
			skin:      pick(r, skins),
			country:   -1,
			timeout:   randString(r, 16),
			sens:      float64(1 + r.IntN(3)),
			flagsBase: 1,
			skill:     r.Float64(),
			activity:  0.2 + 0.8*r.Float64(),
		}
		if r.IntN(3) == 0 {
			id.country = int32(pick(r, []int{276, 250, 616, 643, 840, 124, 76, 152, 156, 410, 36, 710, 364, 792, 826, 752}))
		}
		id.client = pickClient(r)
		id.proto7 = clientVersions[id.client].proto7
		if clientVersions[id.client].ddnet >= 19000 {
			id.flagsBase = pick(r, []int32{1, 65, 129})
		}
		if r.IntN(3) == 0 {
			id.customColor = true
			id.bodyColor = int32(r.IntN(0xffffff))
			id.feetColor = int32(r.IntN(0xffffff))
		} else {
			id.bodyColor, id.feetColor = 65408, 65408
		}
		if r.IntN(40) == 0 {
			id.authLevel = int32(1 + r.IntN(3))
			id.authName = pick(r, authNames)
		}
		out[i] = id
	}
	return out
}

// clientVersion is a game client as it identifies itself.
type clientVersion struct {
	str    string // DDNETVER version string, "" for clients that send none
	ddnet  int32  // DDNet version number (Cl_IsDDNetLegacy, DDNETVER), 0 for vanilla
	proto7 bool
	weight int
}

// clientVersions: mostly current DDNet clients, some older ones, forks and
// vanilla 0.6/0.7 clients (which send no version).
var clientVersions = []clientVersion{
	{"DDNet 19.8.2 (cbb3a1f3e8b1b4c0d2e5f6a7b8c9d0e1f2a3b4c5)", 19082, false, 30},
	{"DDNet 19.4 (1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d)", 19040, false, 12},
	{"DDNet 18.9 (9f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c)", 18090, false, 10},
	{"DDNet 17.4 (d0c1b2a3948576f6e5d4c3b2a1908f7e6d5c4b3a)", 17040, false, 8},
	{"DDNet 17.3 (50a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3)", 17030, false, 4},
	{"DDNet 16.3.2", 16032, false, 4},
	{"DDNet 15.9.1", 15091, false, 2},
	{"DDNet 20.0 (e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3)", 20000, false, 6},
	{"Tater 8.3.1, DDNet 19.4", 19040, false, 4},
	{"Cactus 1.2, DDNet 19.8.2", 19082, false, 2},
	{"F-Client 0.7.5, 3.3", 15003, true, 2},
	{"", 0, true, 3},  // vanilla 0.7
	{"", 0, false, 4}, // vanilla 0.6
}

func pickClient(r *rand.Rand) int {
	total := 0
	for _, c := range clientVersions {
		total += c.weight
	}
	n := r.IntN(total)
	for i, c := range clientVersions {
		if n < c.weight {
			return i
		}
		n -= c.weight
	}
	return 0
}
