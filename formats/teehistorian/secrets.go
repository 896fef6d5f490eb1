// This file is the one list of what counts as a secret in a teehistorian
// file: console commands and which of their arguments are secret, and header
// config variables whose values are secret. Metadata events, Frames, the
// redacted header and Redact all ask this file, and nothing else decides.

package teehistorian

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/replayarchive/replay/formats"
)

// Redacted is what replaces a secret in metadata, frames and redacted
// files. It is a fixed string, so a redacted file does not even reveal a
// secret's length.
const Redacted = formats.Redacted

// SecretCommand is a console command whose arguments carry secrets.
type SecretCommand struct {
	// Name is the command as DDNet (or a common fork) registers it, in lower
	// case; commands match without regard to case, as in DDNet's console.
	Name string
	// Public is how many leading arguments are not secret (an rcon key's
	// identity and level stay readable); every later argument is replaced.
	Public int
	// Secret says what the replaced arguments are.
	Secret string
}

// secretCommands lists the commands that take secrets, from DDNet's server
// and chat command registrations and the account commands of common forks.
// Config variables typed as commands (sv_rcon_password VALUE) are covered by
// secretConfig and secretWords instead.
var secretCommands = [...]SecretCommand{
	{"timeout", 0, "the reconnect code: whoever knows it can take over the player's slot"},
	{"save", 0, "the save code: whoever knows it can load the team's save"},
	{"load", 0, "the save code"},
	{"login", 0, "account name and password (account commands of forks)"},
	{"register", 0, "account name and password, twice"},
	{"auth", 0, "account password"},
	{"changepassword", 0, "old and new account password"},
	{"change_password", 0, "old and new account password"},
	{"rcon_auth", 0, "the rcon password"},
	{"auth_add", 2, "the new rcon key's password"},
	{"auth_change", 2, "the rcon key's new password"},
	{"auth_add_p", 2, "the new rcon key's password hash and salt"},
	{"auth_change_p", 2, "the rcon key's new password hash and salt"},
	{"add_sqlserver", 4, "the database password (and the address and port after it)"},
}

// secretConfig lists config variables whose values are secret, whether they
// appear in the header's config object or are set by a console command.
// DDNet marks most of them CFGFLAG_NONTEEHISTORIC and leaves them out of the
// header, but older versions and forks do not, and sv_reserved_slots_pass
// lacks the flag in the DDNet sources we read.
var secretConfig = [...]string{
	"password",
	"sv_password",
	"sv_rcon_password",
	"sv_rcon_mod_password",
	"sv_rcon_helper_password",
	"sv_reserved_slots_pass",
	"sv_dnsbl_key",
	"ec_password",
}

// secretWords makes any command or config variable secret when one of the
// words of its name (split at '_') is one of them: forks add variables like
// sv_discord_token or sv_api_key that no list can know in advance.
var secretWords = [...]string{"password", "passwd", "pass", "pw", "pwd", "secret", "token", "key"}

// SecretCommands returns a copy of the list of commands with secret
// arguments, for documentation and for callers that index commands.
func SecretCommands() []SecretCommand { return append([]SecretCommand(nil), secretCommands[:]...) }

// SecretConfigVars returns a copy of the list of config variables whose
// values are secret (besides those named with a secret word).
func SecretConfigVars() []string { return append([]string(nil), secretConfig[:]...) }

// IsSecretConfig reports whether the config variable key holds a secret: it
// is listed by SecretConfigVars, its name contains "password" or "passwd",
// or one of its '_'-separated words is password, passwd, pass, pw, pwd,
// secret, token or key. Case does not matter.
func IsSecretConfig(key string) bool {
	var buf [64]byte
	return secretName(lower(buf[:0], []byte(key)))
}

// lower appends the ASCII lower case of b to buf (DDNet's console compares
// names without regard to ASCII case).
func lower(buf, b []byte) []byte {
	for _, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf = append(buf, c)
	}
	return buf
}

// secretName reports whether a lower-case command or variable name is
// secret by secretConfig or secretWords.
func secretName(name []byte) bool {
	for _, s := range secretConfig {
		if string(name) == s {
			return true
		}
	}
	if bytes.Contains(name, []byte("password")) || bytes.Contains(name, []byte("passwd")) {
		return true
	}
	for len(name) > 0 {
		word, rest, _ := bytes.Cut(name, []byte{'_'})
		for _, s := range secretWords {
			if string(word) == s {
				return true
			}
		}
		name = rest
	}
	return false
}

// secretArgs reports whether the arguments of cmd are secret and how many
// leading ones are not. It does not allocate for names up to 64 bytes.
func secretArgs(cmd []byte) (public int, secret bool) {
	var buf [64]byte
	name := lower(buf[:0], cmd)
	for _, c := range secretCommands {
		if string(name) == c.Name {
			return c.Public, true
		}
	}
	return 0, secretName(name)
}

// embedsSecret reports whether arg is itself a console line that sets or
// uses a secret, as the command of a vote option (add_vote "..." "sv_rcon_password x")
// or an exec'd line can be: any of its ';'-separated statements starts with
// a secret command.
func embedsSecret(arg []byte) bool {
	for len(arg) > 0 {
		stmt, rest, _ := bytes.Cut(arg, []byte{';'})
		arg = rest
		// A statement may be quoted, or a chat command ("/timeout CODE"
		// said through say, vote or a bind).
		stmt = bytes.TrimLeft(stmt, " \t\"'/")
		end := bytes.IndexAny(stmt, " \t\"'")
		if end < 0 {
			end = len(stmt)
		}
		if end > 0 {
			if _, secret := secretArgs(stmt[:end]); secret {
				return true
			}
		}
	}
	return false
}

// isSecretArg reports whether argument i of cmd (given secretArgs' answer)
// must be replaced.
func isSecretArg(public int, secret bool, i int, arg []byte) bool {
	return secret && i >= public || embedsSecret(arg)
}

// RedactArgs returns args with every secret argument of cmd replaced by
// Redacted, and whether anything was replaced. It allocates only when it
// replaces something; otherwise it returns args itself.
func RedactArgs(cmd []byte, args [][]byte) ([][]byte, bool) {
	public, secret := secretArgs(cmd)
	var out [][]byte
	for i, a := range args {
		if !isSecretArg(public, secret, i, a) {
			continue
		}
		if out == nil {
			out = append([][]byte(nil), args...)
		}
		out[i] = []byte(Redacted)
	}
	if out == nil {
		return args, false
	}
	return out, true
}

// CommandText returns "cmd arg1 arg2 ..." with every secret argument
// replaced by Redacted. It is the text of command events and frames.
func CommandText(cmd []byte, args [][]byte) string {
	public, secret := secretArgs(cmd)
	var b strings.Builder
	b.Write(cmd)
	for i, a := range args {
		b.WriteByte(' ')
		if isSecretArg(public, secret, i, a) {
			b.WriteString(Redacted)
		} else {
			b.Write(a)
		}
	}
	return strings.ToValidUTF8(b.String(), "\uFFFD")
}

// redactHeaderJSON returns the header JSON text with the value of every
// secret variable in its config object(s) replaced by "[redacted]"; the
// rest of the text is kept byte for byte. A config member that is not an
// object (DDNet always writes one; Header ignores anything else) is replaced
// by {} since its content cannot be checked.
func redactHeaderJSON(text []byte) ([]byte, error) {
	type span struct {
		lo, hi int
		with   string
	}
	var spans []span
	err := eachMember(text, func(key string, lo, hi int) error {
		if key != "config" {
			return nil
		}
		val := text[lo:hi]
		if len(val) == 0 || val[0] != '{' {
			spans = append(spans, span{lo, hi, "{}"})
			return nil
		}
		return eachMember(val, func(k string, vlo, vhi int) error {
			if IsSecretConfig(k) {
				spans = append(spans, span{lo + vlo, lo + vhi, `"` + Redacted + `"`})
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	if len(spans) == 0 {
		return text, nil
	}
	out := make([]byte, 0, len(text))
	prev := 0
	for _, s := range spans {
		out = append(append(out, text[prev:s.lo]...), s.with...)
		prev = s.hi
	}
	return append(out, text[prev:]...), nil
}

// eachMember calls fn with the key and the byte span of the value of every
// member of the JSON object obj, in order, duplicates included.
func eachMember(obj []byte, fn func(key string, lo, hi int) error) error {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return fmt.Errorf("expected a JSON object")
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		key, ok := t.(string)
		if !ok {
			return fmt.Errorf("expected an object key, got %v", t)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		hi := int(dec.InputOffset())
		if err := fn(key, hi-len(raw), hi); err != nil {
			return err
		}
	}
	return nil
}
