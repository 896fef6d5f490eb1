package formats

import "testing"

func TestFindChunk(t *testing.T) {
	chunks := []Chunk{
		{StartTick: 0, Ticks: 10},
		{StartTick: 10, Ticks: 5},
		{StartTick: 20, Ticks: 10}, // gap 15..19
	}
	tests := []struct {
		tick int64
		want int
	}{
		{0, 0}, {9, 0}, {10, 1}, {14, 1}, {15, 2}, {19, 2}, {20, 2}, {29, 2}, {30, 3}, {-1, 0},
	}
	for _, tt := range tests {
		if got := FindChunk(chunks, tt.tick); got != tt.want {
			t.Errorf("FindChunk(%d) = %d, want %d", tt.tick, got, tt.want)
		}
	}
	if got := FindChunk(nil, 5); got != 0 {
		t.Errorf("FindChunk(nil) = %d, want 0", got)
	}
}

func TestErrorMessage(t *testing.T) {
	e := Errorf("teehistorian", 42, "expected item type, got %d", 7)
	if got, want := e.Error(), "teehistorian: byte offset 42: expected item type, got 7"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}
