package catalog

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits on what an entry may hold. Both stores keep them, so an entry one
// takes the other takes too: PostgreSQL's text refuses NUL and invalid
// UTF-8, and bbolt joins kind and key with a NUL.
const (
	maxKindLen  = 64
	maxKeyLen   = 1024
	maxNodeLen  = 256
	maxValueLen = 16 << 20
	// maxBatchBytes caps the values one Since returns (at least one change
	// is always returned), so a follower catching up on large values does
	// not hold the whole feed in memory at once.
	maxBatchBytes = 4 << 20
	// maxSinceLimit caps the changes one Since returns.
	maxSinceLimit = 10000
)

// checkText refuses a name that PostgreSQL's text cannot hold or that is
// longer than max; what names the field in the error.
func checkText(what, s string, max int, empty bool) error {
	if s == "" && !empty {
		return fmt.Errorf("empty %s", what)
	}
	if len(s) > max {
		return fmt.Errorf("%s is %d bytes, more than %d", what, len(s), max)
	}
	if strings.IndexByte(s, 0) >= 0 {
		return fmt.Errorf("%s %q holds a NUL byte", what, s)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s %q is not UTF-8", what, s)
	}
	return nil
}

// checkName refuses an empty or unstorable kind or key.
func checkName(kind Kind, key string) error {
	if err := checkText("kind", string(kind), maxKindLen, false); err != nil {
		return err
	}
	return checkText("key", key, maxKeyLen, false)
}

// checkWrite refuses what checkName refuses, an unstorable node name and a
// value larger than maxValueLen.
func checkWrite(kind Kind, key string, value []byte, node string) error {
	if err := checkName(kind, key); err != nil {
		return err
	}
	if err := checkText("node", node, maxNodeLen, true); err != nil {
		return err
	}
	if len(value) > maxValueLen {
		return fmt.Errorf("value is %d bytes, more than the %d an entry holds", len(value), maxValueLen)
	}
	return nil
}

// checkLease refuses an empty or unstorable lease name or holder and a ttl
// that is not positive.
func checkLease(name, holder string, ttl time.Duration) error {
	if err := checkText("lease name", name, maxKeyLen, false); err != nil {
		return err
	}
	if err := checkText("holder", holder, maxNodeLen, false); err != nil {
		return err
	}
	if ttl <= 0 {
		return fmt.Errorf("lease ttl %v is not positive", ttl)
	}
	return nil
}

// checkSince refuses a limit that is not positive and caps it at
// maxSinceLimit; a negative after means from the start.
func checkSince(after int64, limit int) (int64, int, error) {
	if limit <= 0 {
		return 0, 0, fmt.Errorf("limit %d is not positive", limit)
	}
	return max(after, 0), min(limit, maxSinceLimit), nil
}

// prefixEnd returns the smallest string greater than every string that
// starts with prefix, in byte order (PostgreSQL's "C" collation), so that a
// prefix search is the range [prefix, end); ok is false when there is none
// (the prefix is empty or all U+10FFFF). It increments the last rune,
// skipping the surrogates, as UTF-8 keeps code-point order in byte order and
// no rune's encoding is a prefix of another's.
func prefixEnd(prefix string) (end string, ok bool) {
	for prefix != "" {
		r, size := utf8.DecodeLastRuneInString(prefix)
		prefix = prefix[:len(prefix)-size]
		if r == utf8.MaxRune {
			continue
		}
		r++
		if r >= 0xD800 && r <= 0xDFFF {
			r = 0xE000
		}
		return prefix + string(r), true
	}
	return "", false
}
