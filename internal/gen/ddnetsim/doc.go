// Package ddnetsim simulates DDNet game servers and writes what their
// teehistorian recorder would write, for benchmark data that was not shaped
// to the archive's own storage layout.
//
// The project's first generator (internal/gen/teehistoriangen) was written
// together with the teehistorian column split and shares its assumptions;
// figures measured only on its output flattered the codec (issue 34). This
// package is independent of the storage side: it models the game, not the
// bytes, and hands every record to the format's Recorder
// (formats/teehistorian), which encodes exactly what it is given with
// DDNet's implicit/explicit tick rules. The distributions are this
// package's own.
//
// What it models, and from where:
//
//   - The record stream and its rules (50 ticks a second, PLAYER_DIFF only
//     when a position changed, INPUT_DIFF only when an input changed,
//     TICK_SKIP for ticks with nothing to record, the per-tick order of
//     positions then inputs and events, which client messages DDNet keeps
//     and which it drops, the EX items and the version_minor in which each
//     appeared, header keys and their history) follow the teehistorian
//     report in ../shared/specs/teehistorian.md (DDNet's teehistorian.cpp,
//     gamecontext.cpp, server.cpp, console.cpp at 28baa427, libtw2's
//     doc/teehistorian.md) and ../shared/seeds/teehistorian-format.txt.
//   - The shapes of the data follow statistics of the real files in
//     ../shared/corpus/teehistorian (SOURCES.md), read with this project's
//     decoder: clients send an input every 2 or 3 ticks while the mouse
//     moves, mostly target x/y changes of a few units (even steps at high
//     sensitivity), with jump, hook and fire (a press/release counter)
//     between; the join sequence (JOINVER, JOIN, Cl_StartInfo, PLAYER_NAME,
//     PLAYER_READY, DDNETVER, then Cl_IsDDNetLegacy and DDNet's extended
//     showothers/show-distance/camera-info messages, the first input, and
//     the automatic /timeout a few seconds later); 0.7 clients with 0.7
//     message ids whose votes are recorded; rcon logins and shutdowns; files
//     that end without FINISH. No bytes, names or codes of those files are
//     copied: names, clans, codes, maps and servers are made up here.
//   - The motion is a small DDNet-like physics model (default tuning:
//     gravity 0.5, ground and air control, friction, jump impulses 13.2 and
//     12, a hook that flies 80 units a tick up to 380 and drags at 3, freeze
//     tiles that hold a tee for 3 s, death tiles, respawns) on a generated
//     tile map, driven by simple bots that race, wait, go AFK, spectate,
//     fight, chat (only the chatting flag reaches the file; DDNet does not
//     record chat) and type commands. Positions are quantized to whole
//     units as DDNet's core does, so per-tick deltas are smooth with jumps
//     at spawns and teleports.
//
// Kinds (see Kinds) are named presets of what real servers vary: player
// counts from 1 to 64, empty servers that run for hours, chat- and
// vote-heavy games, long races with few inputs, many short rounds with
// players carried across map changes (prev_game_uuid), and old server
// versions without EX records (version 1, or version 2 before the
// version_minor key and the JOINVER/DDNETVER items).
//
// Everything is deterministic by seed; a Session writes the files of one
// or more simulated servers in a row.
package ddnetsim
