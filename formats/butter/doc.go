// Package butter reads and writes Echo VR replays: the binary .butter format
// of NtsFranz/Butter-Replays (versions 1-3 read, version 3 written byte for
// byte like the reference C# writer), Spark's .echoreplay text format
// (plain or zipped), and Exhibit's older .milk format (read).
//
// The three formats.Codec values are New ("butter"), NewEchoReplay
// ("echoreplay") and NewMilk ("milk"); each is also a formats.Exporter for
// the formats "butter" and "echoreplay". Writer encodes frames to .butter,
// Decode and ReadFrames decode .butter, ReadEchoReplay and
// EchoReplayWriter handle .echoreplay. Decoded frames are Frame values: the
// Echo VR session API JSON with the API's field names.
//
// See docs/formats/butter.md for where our decoding deliberately differs
// from the reference reader's.
package butter
