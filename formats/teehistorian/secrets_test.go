// Tests of the list of secrets (secrets.go) and of Redact: a generated file
// that uses every listed command and config variable must leak none of its
// secrets into metadata, frames or redacted files, and redacted corpus files
// must keep every tick, player and position.

package teehistorian

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
)

// secretsFile records a short game in which every secret command and config
// variable is used. It returns the file, the secret strings and the command
// texts that must stay readable in the metadata.
func secretsFile(t testing.TB) (file []byte, secrets, public []string) {
	t.Helper()
	hi := testHeader()
	hi.Config = [][2]string{{"sv_name", "Public Server"}}
	addCfg := func(k string) {
		v := "cfg-secret-" + k
		hi.Config = append(hi.Config, [2]string{k, v})
		secrets = append(secrets, v)
	}
	for _, k := range SecretConfigVars() {
		addCfg(k)
	}
	addCfg("sv_discord_token") // secret by a word of its name
	hj, _ := hi.MarshalJSON()
	var buf bytes.Buffer
	rec, err := NewRecorder(&buf, hj)
	if err != nil {
		t.Fatal(err)
	}
	rec.PlayerJoin(0, false)
	rec.PlayerName(0, "alice")
	rec.PlayerJoin(1, true)
	rec.PlayerName(1, "bob")
	tick := int64(0)
	next := func() {
		tick++
		rec.BeginTick(tick)
		rec.Player(0, int32(10*tick), 100)
		rec.Player(1, 500, int32(-3*tick))
		rec.Input(0, 1, Input{1, int32(tick), 2})
	}
	cmd := func(name string, args ...string) {
		next()
		if err := rec.ConsoleCommand(0, 4, name, args...); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range SecretCommands() {
		var args []string
		for i := range c.Public {
			args = append(args, fmt.Sprintf("pub-%s-%d", c.Name, i))
		}
		for i := range 2 {
			s := fmt.Sprintf("sec-%s-%d", c.Name, i)
			args = append(args, s)
			secrets = append(secrets, s)
		}
		cmd(c.Name, args...)
		if c.Public > 0 {
			public = append(public, c.Name+" "+strings.Join(args[:c.Public], " ")+" "+Redacted+" "+Redacted)
		}
	}
	for i, k := range append(SecretConfigVars(), "sv_discord_token", "Sv_Rcon_Password", "sv_api_key", "setpassword") {
		s := fmt.Sprintf("cmd-secret-%d", i)
		cmd(k, s)
		secrets = append(secrets, s)
	}
	cmd("TIMEOUT", "upper-case-secret")
	cmd("add_vote", "Open the door", "sv_rcon_password vote-secret; say hi")
	cmd("exec_line", `say hi; "auth_add" carol admin exec-secret`)
	secrets = append(secrets, "upper-case-secret", "vote-secret", "exec-secret")
	cmd("say", "hello public")
	cmd("kick", "1", "spam")
	public = append(public, "say hello public", "kick 1 spam", "add_vote Open the door "+Redacted)
	for range 3 {
		next()
	}
	if err := rec.Finish(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), secrets, public
}

// leaks returns the secrets found in b.
func leaks(b []byte, secrets []string) []string {
	var out []string
	for _, s := range secrets {
		if bytes.Contains(b, []byte(s)) {
			out = append(out, s)
		}
	}
	return out
}

func framesJSON(t testing.TB, rec *formatstest.Recording) []byte {
	t.Helper()
	var fj bytes.Buffer
	enc := json.NewEncoder(&fj)
	if err := New().Frames(context.Background(), rec.Source(), formats.All(), func(f formats.Frame) error { return enc.Encode(f) }); err != nil {
		t.Fatal(err)
	}
	return fj.Bytes()
}

func redact(t testing.TB, rec *formatstest.Recording, from, to int64) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := New().Redact(context.Background(), rec.Source(), formats.Ticks(from, to), &out); err != nil {
		t.Fatalf("redact %d..%d: %v", from, to, err)
	}
	return out.Bytes()
}

func TestSecretsFile(t *testing.T) {
	file, secrets, public := secretsFile(t)
	if l := leaks(file, secrets); len(l) != len(secrets) {
		t.Fatalf("the generated file holds only %d of its %d secrets", len(l), len(secrets))
	}
	rec := formatstest.Split(t, &Codec{ChunkSize: 256}, file)
	if len(rec.ChunkIndex) < 3 {
		t.Fatalf("only %d chunks", len(rec.ChunkIndex))
	}
	mj, _ := json.Marshal(rec.Metadata)
	if l := leaks(mj, secrets); len(l) > 0 {
		t.Errorf("metadata (events, attrs) leaks %q", l)
	}
	cmds := eventTexts(rec.Metadata, formats.EventCommand)
	for _, p := range public {
		if !contains(cmds, "alice: "+p) {
			t.Errorf("command event %q missing from %q", p, cmds)
		}
	}
	if l := leaks(framesJSON(t, rec), secrets); len(l) > 0 {
		t.Errorf("frames leak %q", l)
	}
	// A plain clip is a native copy: the secrets are still there.
	var clip bytes.Buffer
	if err := New().Clip(context.Background(), rec.Source(), formats.All(), &clip); err != nil {
		t.Fatal(err)
	}
	if len(leaks(clip.Bytes(), secrets)) == 0 {
		t.Errorf("the unredacted clip has no secrets: the test cannot tell redaction from loss")
	}
	last := rec.Metadata.Ticks - 1
	for _, r := range [][2]int64{{0, -1}, {0, last / 2}, {3, -1}, {last / 2, last/2 + 3}, {last, -1}} {
		red := redact(t, rec, r[0], r[1])
		if l := leaks(red, secrets); len(l) > 0 {
			t.Errorf("redacted %v leaks %q", r, l)
		}
		rrec := formatstest.Split(t, New(), red)
		if r == [2]int64{0, -1} {
			checkRedactedWhole(t, file, red, rec.Metadata, rrec.Metadata)
		}
		if !strings.Contains(string(rrec.HeaderData), `"sv_rcon_password":"`+Redacted+`"`) || !strings.Contains(string(rrec.HeaderData), `"sv_name":"Public Server"`) {
			t.Errorf("redacted %v header: %s", r, rrec.HeaderData)
		}
		if texts := eventTexts(rrec.Metadata, formats.EventCommand); len(texts) == 0 && r[0] == 0 {
			t.Errorf("redacted %v has no commands", r)
		}
	}
}

// checkRedactedWhole compares a redacted copy of a whole file with the
// original: the same records but for console commands, the same ticks and
// players, and byte-identical records where nothing was secret.
func checkRedactedWhole(t *testing.T, orig, red []byte, om, rm *formats.Metadata) {
	t.Helper()
	if rm.Ticks != om.Ticks || !slices.Equal(playerNames(rm), playerNames(om)) || rm.Attrs["finished"] != om.Attrs["finished"] {
		t.Errorf("redacted: ticks %d players %q finished %s; original %d %q %s",
			rm.Ticks, playerNames(rm), rm.Attrs["finished"], om.Ticks, playerNames(om), om.Attrs["finished"])
	}
	want, got := decodeAll(t, orig), decodeAll(t, red)
	if len(want) != len(got) && !(len(got) < len(want) && om.Attrs["finished"] == "true") {
		t.Fatalf("redacted file has %d records, original %d", len(got), len(want))
	}
	for i := range got {
		w, g := want[i], got[i]
		if strings.Contains(w, " console_command ") {
			// Same tick, client and command; only arguments may differ.
			if cut := strings.Index(w, " args="); cut < 0 || !strings.HasPrefix(g, w[:cut]) {
				t.Fatalf("record %d: redacted %q, original %q", i, g, w)
			}
			continue
		}
		if w != g {
			t.Fatalf("record %d: redacted %q, original %q", i, g, w)
		}
	}
	if st, sr := tickStates(t, orig, 0, om.Ticks-1), tickStates(t, red, 0, om.Ticks-1); !slices.Equal(st, sr) {
		t.Errorf("positions and inputs differ between the original and the redacted file")
	}
}

// TestRedactCorpus redacts every corpus file whole and in ranges: no timeout
// code survives, and the redacted file splits cleanly with the same ticks,
// players and per-tick state.
func TestRedactCorpus(t *testing.T) {
	var codes []string
	files := corpusFiles(t)
	for _, file := range files {
		rd, err := NewReader(bytes.NewReader(file))
		if err != nil {
			t.Fatal(err)
		}
		for {
			it, err := rd.Next()
			if err != nil {
				break
			}
			if it.Type == ItemConsoleCommand {
				if args, changed := RedactArgs(it.Cmd, it.Args); changed {
					for i := range args {
						if !bytes.Equal(args[i], it.Args[i]) {
							codes = append(codes, string(it.Args[i]))
						}
					}
				}
			}
		}
	}
	if !contains(codes, "tjfekX6ScC8A3NkN") || len(codes) < 10 {
		t.Fatalf("expected the Tutorial timeout code among the corpus secrets %q", codes)
	}
	for name, file := range files {
		t.Run(name, func(t *testing.T) {
			rec := formatstest.Split(t, &Codec{ChunkSize: 2048}, file)
			red := redact(t, rec, 0, -1)
			if l := leaks(red, codes); len(l) > 0 {
				t.Fatalf("redacted file leaks %q", l)
			}
			rrec, err := formatstest.TrySplit(New(), red)
			if err != nil {
				t.Fatalf("redacted file does not split: %v", err)
			}
			if len(rrec.Metadata.Warnings) != len(rec.Metadata.Warnings) {
				t.Errorf("warnings %q, original %q", rrec.Metadata.Warnings, rec.Metadata.Warnings)
			}
			checkRedactedWhole(t, file, red, rec.Metadata, rrec.Metadata)
			// A range: the clip's records, with the secrets replaced.
			last := rec.Metadata.Ticks - 1
			for _, r := range [][2]int64{{1, max(1, last/2)}, {last / 3, -1}} {
				if r[0] > last {
					continue
				}
				red := redact(t, rec, r[0], r[1])
				if l := leaks(red, codes); len(l) > 0 {
					t.Fatalf("redacted %v leaks %q", r, l)
				}
				var clip bytes.Buffer
				if err := New().Clip(context.Background(), rec.Source(), formats.Ticks(r[0], r[1]), &clip); err != nil {
					t.Fatal(err)
				}
				want, got := decodeAll(t, clip.Bytes()), decodeAll(t, red)
				if len(want) != len(got) {
					t.Fatalf("redacted %v: %d records, clip %d", r, len(got), len(want))
				}
				for i := range got {
					if want[i] != got[i] && !strings.Contains(want[i], " console_command ") {
						t.Fatalf("redacted %v: record %d %q, clip %q", r, i, got[i], want[i])
					}
				}
			}
		})
	}
}

func TestSecretNames(t *testing.T) {
	for _, tc := range []struct {
		cmd    string
		args   []string
		want   string
		secret bool
	}{
		{"timeout", []string{"abc"}, "timeout [redacted]", true},
		{"auth_add", []string{"bob", "admin", "hunter2"}, "auth_add bob admin [redacted]", true},
		{"auth_add_p", []string{"bob", "mod", "hash", "salt"}, "auth_add_p bob mod [redacted] [redacted]", true},
		{"auth_add", []string{"bob", "admin"}, "auth_add bob admin", false},
		{"add_sqlserver", []string{"w", "db", "pfx", "user", "pw", "1.2.3.4", "3306"}, "add_sqlserver w db pfx user [redacted] [redacted] [redacted]", true},
		{"sv_rcon_password", []string{"x"}, "sv_rcon_password [redacted]", true},
		{"sv_map", []string{"Kobra"}, "sv_map Kobra", false},
		{"team", []string{"3"}, "team 3", false},
		{"sv_keyboard_layout", []string{"us"}, "sv_keyboard_layout us", false},
		{"sv_hook_key", []string{"k"}, "sv_hook_key [redacted]", true},
		{"say", []string{"my password is weak"}, "say my password is weak", false},
		{"say", []string{"/timeout abcdef"}, "say [redacted]", true},
		{"say", []string{"the rules: /rules"}, "say the rules: /rules", false},
		{"add_vote", []string{"x", "  'sv_password' y"}, "add_vote x [redacted]", true},
		{"shutdown", nil, "shutdown", false},
	} {
		args := make([][]byte, len(tc.args))
		for i, a := range tc.args {
			args[i] = []byte(a)
		}
		if got := CommandText([]byte(tc.cmd), args); got != tc.want {
			t.Errorf("CommandText(%s %q) = %q, want %q", tc.cmd, tc.args, got, tc.want)
		}
		red, changed := RedactArgs([]byte(tc.cmd), args)
		if changed != tc.secret || len(red) != len(args) {
			t.Errorf("RedactArgs(%s %q) changed=%v, want %v", tc.cmd, tc.args, changed, tc.secret)
		}
		if tc.secret && bytes.Equal(bytes.Join(red, nil), bytes.Join(args, nil)) {
			t.Errorf("RedactArgs(%s %q) replaced nothing", tc.cmd, tc.args)
		}
	}
	cmd, args := []byte("sv_some_long_config_variable"), [][]byte{[]byte("3")}
	if n := testing.AllocsPerRun(100, func() { RedactArgs(cmd, args) }); n > 0 {
		t.Errorf("RedactArgs of a public command allocates %.0f times", n)
	}
}

func TestRedactHeaderJSON(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"config":{"sv_name":"a","sv_rcon_password":"b"}}`, `{"config":{"sv_name":"a","sv_rcon_password":"[redacted]"}}`},
		{"{ \"config\" : { \"password\" :\n 123 , \"x\":\"y\" } }", "{ \"config\" : { \"password\" :\n \"[redacted]\" , \"x\":\"y\" } }"},
		{`{"config":{"sv_rcon_passwor\u0064":"b"},"config":{"ec_password":{"a":"b"}}}`, `{"config":{"sv_rcon_passwor\u0064":"[redacted]"},"config":{"ec_password":"[redacted]"}}`},
		{`{"config":"sv_rcon_password b","tuning":{}}`, `{"config":{},"tuning":{}}`},
		{`{"version":"2","config":{}}`, `{"version":"2","config":{}}`},
	} {
		got, err := redactHeaderJSON([]byte(tc.in))
		if err != nil || string(got) != tc.want {
			t.Errorf("redactHeaderJSON(%s) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
		if !json.Valid(got) {
			t.Errorf("redactHeaderJSON(%s) is not JSON: %s", tc.in, got)
		}
	}
	if _, err := redactHeaderJSON([]byte(`[1]`)); err == nil {
		t.Errorf("a header that is not an object: no error")
	}
}

// FuzzRedactHeader: any JSON object's redaction is valid JSON holding no
// value of a secret config variable.
func FuzzRedactHeader(f *testing.F) {
	hi := testHeader()
	hi.Config = [][2]string{{"sv_name", "n"}, {"sv_rcon_password", "secret-1"}}
	hj, _ := hi.MarshalJSON()
	f.Add(hj)
	f.Add([]byte(`{"config":{"password":"secret-2","a":{"b":[1,2]}},"config":"x"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var m map[string]json.RawMessage
		if json.Unmarshal(b, &m) != nil {
			return
		}
		out, err := redactHeaderJSON(b)
		if err != nil {
			t.Fatalf("an object that parses does not redact: %v", err)
		}
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatalf("redacted header is not JSON: %v: %s", err, out)
		}
		var cfg map[string]json.RawMessage
		if json.Unmarshal(m["config"], &cfg) != nil {
			return
		}
		for k, v := range cfg {
			if IsSecretConfig(k) && string(v) != `"`+Redacted+`"` {
				t.Fatalf("config %q keeps value %s", k, v)
			}
		}
	})
}
