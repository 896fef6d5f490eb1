// Package teehistorian reads and writes DDNet teehistorian server recordings
// and implements formats.Codec for them under the name "teehistorian".
//
// A teehistorian file is a 16-byte magic UUID, a JSON header ended by a NUL,
// and a stream of varint-coded records (player positions, inputs, client
// messages, joins, drops, console commands, extension items) whose ticks are
// implicit. Reader decodes it record by record without allocating per
// record; Recorder writes it with the same rules as DDNet's CTeeHistorian, so
// that both agree byte for byte with DDNet's unit-test vectors
// (internal/gen/teehistoriangen builds realistic, deterministic files on it
// for tests, benchmarks and the demo).
//
// The Codec splits a file into its header and chunks cut at tick boundaries,
// each with a resume state (tick, implicit-tick state, positions, inputs,
// teams, names) that lets Frames and Clip start decoding at any chunk.
// One list (secrets.go) says what is secret: console commands and which of
// their arguments (timeout codes, save codes, account and rcon passwords,
// hashes and salts) and header config variables (rcon and server
// passwords). Metadata events and frames never show them, and Redact
// (formats.Redactor) writes a valid file with them replaced. Records are
// bounded as they stream in (MaxRecordBytes), whatever their length fields
// claim.
package teehistorian
