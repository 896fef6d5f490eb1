// This file parses the JSON header that follows the magic. The header bytes
// are kept verbatim for export; the parsed fields feed the metadata.

package teehistorian

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// Header is a parsed teehistorian header.
type Header struct {
	// Raw is the whole header block: magic, JSON text and the NUL after it.
	Raw []byte
	// JSON is the JSON text (Raw without magic and NUL).
	JSON []byte

	Version         int // 1 or 2
	VersionMinor    int // 0 when absent (before DDNet 15.6)
	Comment         string
	GameUUID        string
	PrevGameUUID    string
	ServerVersion   string
	StartTime       string // as written
	ServerName      string
	ServerPort      string
	GameType        string
	MapName         string
	MapSize         string
	MapSHA256       string
	MapCRC          string
	PrngDescription string
	Config          map[string]string
	Tuning          map[string]string
	UUIDs           []string
}

// Start parses StartTime: "2006-01-02T15:04:05-0700" (version 2) or
// "2006-01-02 15:04:05 -0700" (version 1).
func (h *Header) Start() (time.Time, error) {
	for _, layout := range []string{"2006-01-02T15:04:05-0700", "2006-01-02 15:04:05 -0700", time.RFC3339} {
		if t, err := time.Parse(layout, h.StartTime); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("teehistorian: unrecognised start_time %q", h.StartTime)
}

// scalar turns a JSON string or number into its text.
func scalar(m json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(m, &s) == nil {
		return s, true
	}
	var n json.Number
	if json.Unmarshal(m, &n) == nil {
		return n.String(), true
	}
	return "", false
}

// parseHeaderJSON fills h from the JSON text. It returns a description of
// what was expected when the text is not a usable header.
func parseHeaderJSON(h *Header, text []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(text, &m); err != nil {
		return fmt.Errorf("expected a JSON object header: %v", err)
	}
	get := func(k string) string {
		if v, ok := m[k]; ok {
			s, _ := scalar(v)
			return s
		}
		return ""
	}
	v := get("version")
	switch v {
	case "1":
		h.Version = 1
	case "2":
		h.Version = 2
	default:
		return fmt.Errorf("expected header version \"1\" or \"2\", got %q", v)
	}
	if mv := get("version_minor"); mv != "" {
		n, err := strconv.Atoi(mv)
		if err != nil {
			return fmt.Errorf("expected a numeric version_minor, got %q", mv)
		}
		h.VersionMinor = n
	}
	h.Comment = get("comment")
	h.GameUUID = get("game_uuid")
	h.PrevGameUUID = get("prev_game_uuid")
	h.ServerVersion = get("server_version")
	h.StartTime = get("start_time")
	h.ServerName = get("server_name")
	h.ServerPort = get("server_port")
	h.GameType = get("game_type")
	h.MapName = get("map_name")
	h.MapSize = get("map_size")
	h.MapSHA256 = get("map_sha256")
	h.MapCRC = get("map_crc")
	h.PrngDescription = get("prng_description")
	obj := func(k string) map[string]string {
		raw, ok := m[k]
		if !ok {
			return nil
		}
		var om map[string]json.RawMessage
		if json.Unmarshal(raw, &om) != nil {
			return nil
		}
		out := make(map[string]string, len(om))
		for k, v := range om {
			out[k], _ = scalar(v)
		}
		return out
	}
	h.Config = obj("config")
	h.Tuning = obj("tuning")
	if raw, ok := m["uuids"]; ok {
		_ = json.Unmarshal(raw, &h.UUIDs)
	}
	return nil
}

// HeaderInfo is what NewRecorder writes into a header, in DDNet's key order
// with every value as a JSON string. Empty optional fields are omitted.
type HeaderInfo struct {
	VersionMinor    string // default "22"
	GameUUID        string
	PrevGameUUID    string // optional
	ServerVersion   string
	StartTime       time.Time
	ServerName      string
	ServerPort      string
	GameType        string
	MapName         string
	MapSize         string
	MapSHA256       string // optional
	MapCRC          string
	PrngDescription string // optional
	Config          [][2]string
	Tuning          [][2]string
	UUIDs           []string
}

// MarshalJSON writes the header JSON the way DDNet's WriteHeader does: fixed
// key order, no whitespace, all values strings.
func (h HeaderInfo) MarshalJSON() ([]byte, error) {
	b := []byte("{")
	kv := func(k, v string) {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
		b = append(b, ':')
		b = appendJSONString(b, v)
	}
	minor := h.VersionMinor
	if minor == "" {
		minor = "22"
	}
	kv("comment", "teehistorian@ddnet.tw")
	kv("version", "2")
	kv("version_minor", minor)
	kv("game_uuid", h.GameUUID)
	if h.PrevGameUUID != "" {
		kv("prev_game_uuid", h.PrevGameUUID)
	}
	kv("server_version", h.ServerVersion)
	kv("start_time", h.StartTime.Format("2006-01-02T15:04:05-0700"))
	kv("server_name", h.ServerName)
	kv("server_port", h.ServerPort)
	kv("game_type", h.GameType)
	kv("map_name", h.MapName)
	kv("map_size", h.MapSize)
	if h.MapSHA256 != "" {
		kv("map_sha256", h.MapSHA256)
	}
	kv("map_crc", h.MapCRC)
	if h.PrngDescription != "" {
		kv("prng_description", h.PrngDescription)
	}
	pairs := func(name string, ps [][2]string) {
		b = append(b, ',', '"')
		b = append(b, name...)
		b = append(b, '"', ':', '{')
		for i, p := range ps {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, p[0])
			b = append(b, ':')
			b = appendJSONString(b, p[1])
		}
		b = append(b, '}')
	}
	pairs("config", h.Config)
	pairs("tuning", h.Tuning)
	b = append(b, `,"uuids":[`...)
	for i, u := range h.UUIDs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, u)
	}
	b = append(b, ']', '}')
	return b, nil
}

// appendJSONString escapes s like DDNet's EscapeJson: \" \\ \b \n \r \t,
// other control bytes as \u00XX, everything else raw.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\b':
			b = append(b, '\\', 'b')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			if c < 0x20 {
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
			} else {
				b = append(b, c)
			}
		}
	}
	return append(b, '"')
}
