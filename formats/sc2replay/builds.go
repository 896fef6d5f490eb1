// This file registers StarCraft II base builds newer than s2prot v1.5.2 knows
// whose protocol is byte-identical to 80949 (5.0.0).

package sc2replay

import "github.com/icza/s2prot/build"

// ProtocolBase is the newest distinct protocol table. Blizzard's s2protocol
// shows every later build up to 97425 with an identical table.
const ProtocolBase = 80949

// extraBuilds are the base builds this package maps to ProtocolBase on top of
// what s2prot v1.5.2 ships (which stops at 92440). They are the builds
// published in s2prot master and Blizzard/s2protocol up to 5.0.16.97425.
var extraBuilds = [...]int{93272, 93333, 94137, 95248, 95299, 95841, 97364, 97425}

// init registers extraBuilds with s2prot. s2prot caches a failed lookup, so
// this must run before any replay is parsed, hence init rather than New.
// Entries s2prot already has are left alone.
func init() {
	for _, b := range extraBuilds {
		if _, ok := build.Builds[b]; ok {
			continue
		}
		if _, ok := build.Duplicates[b]; ok {
			continue
		}
		build.Duplicates[b] = ProtocolBase
	}
}
