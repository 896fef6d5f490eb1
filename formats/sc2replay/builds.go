// This file picks the protocol table for a replay's base build: the table
// s2prot ships for it, or, for a build no table lists (betas, patches newer
// than s2prot), the nearest known table that decodes the replay's own
// details, initData and message events exactly and sensibly.

package sc2replay

import (
	"cmp"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/icza/s2prot"
	"github.com/icza/s2prot/build"
)

// ProtocolBase is the newest distinct protocol table s2prot ships (5.0.0).
const ProtocolBase = 80949

// knownDuplicates are base builds newer than s2prot v1.5.2 (which stops at
// 92440) that Blizzard/s2protocol and s2prot master publish with a table
// identical to ProtocolBase, up to 5.0.16.97425. They only spare the
// nearest-table search a few decodes: a build missing here is still found.
var knownDuplicates = map[int]int{
	93272: ProtocolBase, 93333: ProtocolBase, 94137: ProtocolBase, 95248: ProtocolBase,
	95299: ProtocolBase, 95841: ProtocolBase, 97364: ProtocolBase, 97425: ProtocolBase,
}

// maxCandidates bounds how many tables a build without one is tried with.
const maxCandidates = 12

// sourceBuild returns the build whose table build b uses (itself, or the
// older build with an identical table), and false when none is known.
func sourceBuild(b int) (int, bool) {
	if _, ok := build.Builds[b]; ok {
		return b, true
	}
	o, ok := build.Duplicates[b]
	if !ok {
		o, ok = knownDuplicates[b]
	}
	if _, has := build.Builds[o]; ok && has {
		return o, true
	}
	return 0, false
}

// candidates returns the distinct tables to try for build b, the table of
// the nearest known build first.
func candidates(b int) []int {
	var known []int
	for k := range build.Builds {
		known = append(known, k)
	}
	for k := range build.Duplicates {
		known = append(known, k)
	}
	for k := range knownDuplicates {
		known = append(known, k)
	}
	dist := func(k int) int { return max(k-b, b-k) }
	slices.SortFunc(known, func(x, y int) int { return cmp.Or(cmp.Compare(dist(x), dist(y)), cmp.Compare(x, y)) })
	var out []int
	for _, k := range known {
		if src, ok := sourceBuild(k); ok && !slices.Contains(out, src) {
			out = append(out, src)
			if len(out) == maxCandidates {
				break
			}
		}
	}
	return out
}

// guessProtocol tries the candidate tables for the replay's build and
// returns the first that decodes details and initData to their last byte,
// with sensible values, and every message event; nil when none does.
func (r *replay) guessProtocol() *protocol {
	det, _, err := r.stream(fileDetails, fileDetailsBackup)
	if err != nil {
		return nil
	}
	ini, _, err := r.stream(fileInitData, fileInitBackup)
	if err != nil {
		return nil
	}
	msg, _, _ := r.stream(fileMessageEvents)
	for _, c := range candidates(r.baseBuild) {
		p := protocolFor(c)
		if p != nil && fits(p, det, ini, msg) == nil {
			return p
		}
	}
	return nil
}

// fits checks that p decodes the replay's details, initData and message
// events exactly and that the values make sense.
func fits(p *protocol, det, ini, msg []byte) error {
	d, used, err := decodeVersioned(p, det, p.details)
	if err != nil {
		return err
	}
	if used != len(det) {
		return fmt.Errorf("details: %d of %d bytes used", used, len(det))
	}
	if err := saneDetails(d); err != nil {
		return err
	}
	i, used, err := decodeBitPacked(p, ini, p.initData)
	if err != nil {
		return err
	}
	if used != len(ini) {
		return fmt.Errorf("initData: %d of %d bytes used", used, len(ini))
	}
	if err := saneInitData(i); err != nil {
		return err
	}
	es, _ := p.stream(fileMessageEvents)
	it := newEventIter(p, msg, es)
	for n := 0; n < maxMessageEvents; n++ {
		if _, ok := it.next(); !ok {
			return it.err
		}
	}
	return nil
}

// saneDetails rejects details that decoded without error but cannot be
// real: no players or more than 16, names or map that are not text,
// results and races out of range.
func saneDetails(d s2prot.Struct) error {
	players := d.Array("playerList")
	if len(players) == 0 || len(players) > 16 {
		return fmt.Errorf("details: %d players", len(players))
	}
	if t := d.Stringv("title"); t == "" || !utf8.ValidString(t) {
		return fmt.Errorf("details: map title %q", t)
	}
	for i, pl := range players {
		p, ok := pl.(s2prot.Struct)
		if !ok {
			return fmt.Errorf("details: player %d is not a struct", i)
		}
		if n := p.Stringv("name"); n == "" || !utf8.ValidString(n) {
			return fmt.Errorf("details: player %d name %q", i, n)
		}
		if r := p.Int("result"); r < 0 || r > 3 {
			return fmt.Errorf("details: player %d result %d", i, r)
		}
		if !utf8.ValidString(p.Stringv("race")) {
			return fmt.Errorf("details: player %d race is not text", i)
		}
	}
	return nil
}

// saneInitData rejects initData without lobby slots or user data.
func saneInitData(i s2prot.Struct) error {
	lobby := i.Structv("syncLobbyState")
	slots := lobby.Array("lobbyState", "slots")
	users := lobby.Array("userInitialData")
	if len(slots) == 0 || len(slots) > 32 || len(users) == 0 || len(users) > 32 {
		return fmt.Errorf("initData: %d slots, %d users", len(slots), len(users))
	}
	for _, u := range users {
		us, ok := u.(s2prot.Struct)
		if !ok || !utf8.ValidString(us.Stringv("name")) {
			return fmt.Errorf("initData: user data is not text")
		}
	}
	return nil
}
