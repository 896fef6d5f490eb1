// Package butter reads and writes Echo VR replays. It holds three formats,
// one formats.Codec each, in one package because they share one data model
// (Frame, the session API JSON) and convert into each other:
//
//   - .butter (New, Name = "butter"): the binary format of
//     NtsFranz/Butter-Replays, versions 1-3 read, version 3 written byte
//     for byte like the reference C# writer;
//   - .echoreplay (NewEchoReplay, EchoReplayName = "echoreplay"): Spark's text format,
//     one API fetch per line, plain or zipped;
//   - .milk (NewMilk, MilkName = "milk"): Exhibit's older binary format, read
//     only.
//
// Each codec is also a formats.Exporter for the formats "butter" and
// "echoreplay". Writer encodes frames to .butter, Decode and ReadFrames
// decode .butter, ReadEchoReplay and EchoReplayWriter handle .echoreplay.
// Decoded frames are Frame values: the Echo VR session API JSON with the
// API's field names; both the current API shape and the 2018 one (a
// player's top-level pose, [x, y, z] hands) decode to it.
//
// Untrusted sizes (chunk tables, zip members, compressed chunks) are read
// through internal/bounded: memory follows the bytes actually read, within
// a per-file budget of 256 MiB.
//
// See docs/formats/butter.md for where our decoding deliberately differs
// from the reference reader's.
package butter
