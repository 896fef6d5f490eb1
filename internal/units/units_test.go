package units

import (
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"90s", 90 * time.Second, true},
		{"1m04s", 64 * time.Second, true},
		{"36h", 36 * time.Hour, true},
		{"90d", 90 * Day, true},
		{"2w", 2 * Week, true},
		{"1y", Year, true},
		{"1.5d", 36 * time.Hour, true},
		{"0s", 0, true},
		{"-5s", 0, false},
		{"-1d", 0, false},
		{"2x", 0, false},
		{"", 0, false},
		{"d", 0, false},
		{"1e300y", 0, false},
	} {
		got, err := ParseDuration(tc.in)
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestFormatDurationRoundTrips(t *testing.T) {
	for _, d := range []time.Duration{90 * Day, 2 * Week, Year, 36 * time.Hour, 90 * time.Second} {
		s := FormatDuration(d)
		back, err := ParseDuration(s)
		if err != nil || back != d {
			t.Errorf("FormatDuration(%v) = %q, which parses as %v, %v", d, s, back, err)
		}
	}
}

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"500MB", 500e6, true},
		{"2GiB", 2 << 30, true},
		{"200GiB", 200 << 30, true},
		{"10k", 10 << 10, true},
		{"12", 12, true},
		{"0.1B", 0, false},
		{"1ZB", 0, false},
		{"", 0, false},
		{"1e30TB", 0, false},
	} {
		got, err := ParseSize(tc.in)
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("ParseSize(%q) = %v, %v; want %v ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	for in, want := range map[int64]string{12: "12 B", 1536: "1.5 KiB", 3 << 30: "3.0 GiB"} {
		if got := FormatBytes(in); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", in, got, want)
		}
	}
}
