// Small output helpers shared by the commands.

package main

import "encoding/json"

// writeJSON prints v as indented JSON on stdout.
func writeJSON(e *env, v any) error {
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
