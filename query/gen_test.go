// A deterministic generator of recordings with events for benchmarks.

package query

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/replayarchive/replay/formats"
)

// genConfig sizes a generated corpus.
type genConfig struct {
	Recordings int
	Events     int // average events per recording
	Players    int // size of the player name pool
	Seed       uint64
}

var genSyllables = []string{"ka", "to", "ri", "mo", "zu", "ne", "shi", "ra", "ki", "lo", "ven", "dar", "xi", "po", "gal", "tor", "mi", "sa", "qu", "el"}

var (
	genMaps     = []string{"ctf5", "dm1", "Dust2", "Lost Temple", "Kobra", "Sunny Side", "Tutorial", "Gold One", "ctf_space", "Bridge"}
	genFormats  = []string{"teehistorian", "butter", "sc2replay", "vtx", "hcrp"}
	genFlags    = []string{"aimbot", "speedhack", "wallhack", "macro", "report", "toxic", "desync", "teleport"}
	genKinds    = []string{formats.EventJoin, formats.EventDrop, formats.EventVote, formats.EventFinish, formats.EventLogin, formats.EventTeam}
	genCommands = []string{"kick", "ban", "timeout", "mute", "vote", "status", "say", "map", "kill", "spec", "restart", "pause"}
)

// genName returns a deterministic name for n: syllables plus a number.
func genName(n int) string {
	s := ""
	for k := n; ; k /= len(genSyllables) {
		s += genSyllables[k%len(genSyllables)]
		if k < len(genSyllables) {
			break
		}
	}
	return fmt.Sprintf("%s%d", s, n%97)
}

// genWord returns one of 500 chat words.
func genWord(r *rand.Rand) string {
	n := r.IntN(500)
	return genSyllables[n%20] + genSyllables[(n/20)%20] + genSyllables[(n/7)%20]
}

// genRecording returns recording i of the corpus; the same config and i
// always give the same recording.
func genRecording(c genConfig, i int) RecordingDoc {
	r := rand.New(rand.NewPCG(c.Seed, uint64(i)))
	year := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	rec := RecordingDoc{
		ID:       fmt.Sprintf("%08x-0000-4000-8000-%012x", c.Seed, i),
		Format:   genFormats[r.IntN(len(genFormats))],
		Session:  fmt.Sprintf("sess-%d", i/4),
		Start:    year.Add(time.Duration(r.Int64N(int64(365 * 24 * time.Hour)))).Truncate(time.Second),
		Duration: time.Minute + time.Duration(r.Int64N(int64(2*time.Hour))),
		Map:      genMaps[r.IntN(len(genMaps))],
		Server:   fmt.Sprintf("server-%02d", r.IntN(50)),
		Attrs:    map[string]string{"version": fmt.Sprintf("0.%d", r.IntN(8)), "rcon_password": "s3cr3t-never-indexed"},
	}
	rec.Ticks = int64(rec.Duration / (20 * time.Millisecond))
	np := 2 + r.IntN(10)
	for range np {
		n := r.IntN(c.Players)
		rec.Players = append(rec.Players, formats.Player{Name: genName(n), ID: fmt.Sprintf("u%d", n), Team: "red"})
	}
	if r.IntN(10) == 0 {
		rec.Flags = append(rec.Flags, genFlags[r.IntN(len(genFlags))])
	}
	rec.Held = r.IntN(50) == 0
	ne := c.Events/5 + r.IntN(c.Events*8/5+1)
	rec.Events = make([]formats.Event, ne)
	for k := range rec.Events {
		e := &rec.Events[k]
		e.Tick = rec.Ticks * int64(k) / int64(ne)
		e.Time = time.Duration(e.Tick) * 20 * time.Millisecond
		p := rec.Players[r.IntN(np)]
		e.Player, e.PlayerID = p.Name, p.ID
		switch x := r.IntN(10); {
		case x < 3:
			e.Kind = formats.EventCommand
			cmd := genCommands[r.IntN(len(genCommands))]
			switch cmd {
			case "kick", "mute", "kill", "spec":
				e.Text = fmt.Sprintf("%s %d", cmd, r.IntN(64))
			case "ban", "timeout":
				e.Text = fmt.Sprintf("%s %d %dm %s", cmd, r.IntN(64), 1+r.IntN(60), genWord(r))
			case "say":
				e.Text = "say " + genWord(r) + " " + genWord(r)
			case "map":
				e.Text = "map " + genMaps[r.IntN(len(genMaps))]
			default:
				e.Text = cmd
			}
		case x < 8:
			e.Kind = formats.EventChat
			n := 1 + r.IntN(6)
			for w := range n {
				if w > 0 {
					e.Text += " "
				}
				e.Text += genWord(r)
			}
		default:
			e.Kind = genKinds[r.IntN(len(genKinds))]
			e.Text = e.Kind + " " + p.Name
		}
	}
	return rec
}
