//go:build !unix

package durable

// SyncDir does nothing: Windows cannot sync a directory, and its renames
// need it not.
func SyncDir(string) error { return nil }
