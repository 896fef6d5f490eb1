//go:build !linux

package query

// trimMappings does nothing where the process's mappings are not read
// (see resident_linux.go).
func trimMappings() error { return nil }
