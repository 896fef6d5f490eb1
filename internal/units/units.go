// Package units is the one grammar for durations and byte sizes that the
// query language, the command line's flags and the HTTP API all accept.
package units

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Day, Week and Year are the calendar-free units ParseDuration accepts
// beyond Go's: 24 hours, 7 days and 365 days.
const (
	Day  = 24 * time.Hour
	Week = 7 * Day
	Year = 365 * Day
)

var durationUnits = map[byte]time.Duration{'d': Day, 'w': Week, 'y': Year}

// ParseDuration reads a Go duration ("90s", "1h30m", "1m04s") or a number of
// days, weeks or years ("90d", "2w", "1.5y"). Negative durations are
// refused; zero is allowed.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("empty duration")
	}
	bad := fmt.Errorf("%q: want a duration like 90s, 1m04s, 36h, 90d, 2w or 1y", s)
	if unit, ok := durationUnits[s[len(s)-1]]; ok {
		n, err := strconv.ParseFloat(s[:len(s)-1], 64)
		if err != nil || math.IsNaN(n) || math.IsInf(n, 0) || n < 0 {
			return 0, bad
		}
		f := n * float64(unit)
		if f >= math.MaxInt64 {
			return 0, fmt.Errorf("%q: too long", s)
		}
		return time.Duration(f), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, bad
	}
	return d, nil
}

// FormatDuration prints d in the largest of days, weeks... that divides it
// exactly ("90d", "2w"), else as Go does ("1h30m0s").
func FormatDuration(d time.Duration) string {
	switch {
	case d >= Year && d%Year == 0:
		return strconv.FormatInt(int64(d/Year), 10) + "y"
	case d >= Week && d%Week == 0 && d/Week < 52:
		return strconv.FormatInt(int64(d/Week), 10) + "w"
	case d >= Day && d%Day == 0:
		return strconv.FormatInt(int64(d/Day), 10) + "d"
	}
	return d.String()
}

// ParseSize reads a byte count with an optional unit: B, KB, MB, GB, TB in
// powers of 1000; KiB, MiB, GiB, TiB (or K, M, G, T) in powers of 1024.
func ParseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("empty size")
	}
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := s, ""
	if i >= 0 {
		num, unit = s[:i], strings.ToLower(strings.TrimSpace(s[i:]))
	}
	mult := map[string]float64{
		"": 1, "b": 1,
		"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
		"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40,
		"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
	}[unit]
	n, err := strconv.ParseFloat(num, 64)
	if mult == 0 || err != nil {
		return 0, fmt.Errorf("%q: want a size like 500MB or 2GiB", s)
	}
	v := n * mult
	if v < 1 {
		return 0, fmt.Errorf("%q: must be at least one byte", s)
	}
	if v >= math.MaxInt64 {
		return 0, fmt.Errorf("%q: too large", s)
	}
	return int64(v), nil
}

// FormatBytes prints n in binary units ("1.5 MiB").
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
