package replay

import (
	"testing"
	"time"
)

// TestTicksIn checks the offset/tick conversions at whole ticks, where a
// float product of seconds and rate used to land one tick short.
func TestTicksIn(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		rate float64
		want int64
	}{
		{48700 * time.Millisecond, 50, 2435}, // 48.7 s * 50 was 2434.999…
		{120 * time.Second, 50, 6000},
		{19 * time.Millisecond, 50, 0},
		{20 * time.Millisecond, 50, 1},
		{1234567 * time.Hour, 50, 1234567 * 3600 * 50}, // no overflow
		{time.Second, 20, 20},
		{time.Second, 0.5, 0},
		{3 * time.Second, 1.5, 4},
		{-time.Second, 50, 0},
		{time.Second, 0, 0},
	} {
		if got := ticksIn(tc.d, tc.rate); got != tc.want {
			t.Errorf("ticksIn(%s, %g) = %d, want %d", tc.d, tc.rate, got, tc.want)
		}
		if tc.want > 0 && tc.rate == float64(int64(tc.rate)) {
			if back := ticksIn(tickSpan(tc.want, tc.rate), tc.rate); back != tc.want {
				t.Errorf("ticksIn(tickSpan(%d, %g)) = %d", tc.want, tc.rate, back)
			}
		}
	}
	if got := tickSpan(2435, 50); got != 48700*time.Millisecond {
		t.Errorf("tickSpan(2435, 50) = %s, want 48.7s", got)
	}
}
