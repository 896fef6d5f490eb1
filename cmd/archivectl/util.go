// Small output helpers shared by the commands.

package main

import (
	"encoding/json"
	"fmt"
)

// writeJSON prints v as indented JSON on stdout.
func writeJSON(e *env, v any) error {
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// plural is n and the noun for n of it: "1 recording", "2 recordings"
// (many is one with an "s" when ""), so counts read right at 1.
func plural(n int, one, many string) string {
	if many == "" {
		many = one + "s"
	}
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
