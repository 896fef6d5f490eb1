package formats

import "testing"

func TestRange(t *testing.T) {
	tests := []struct {
		r                     Range
		str                   string
		open, all, empty      bool
		in, out, past, before int64 // a tick inside, one outside, one past, one before
	}{
		{All(), "0..end", true, true, false, 5, -1, -1, -1},
		{Ticks(10, 20), "10..20", false, false, false, 20, 21, 21, 9},
		{Ticks(10, 10), "10..10", false, false, false, 10, 11, 11, 9},
		{Ticks(-5, -1), "-5..end", true, true, false, 0, -6, -1, -6},
		{Ticks(7, -1), "7..end", true, false, false, 1 << 40, 6, -1, 6},
		{Ticks(5, 2), "5..2", false, false, true, -1, 4, 3, 1},
	}
	for _, tt := range tests {
		if got := tt.r.String(); got != tt.str {
			t.Errorf("%+v.String() = %q, want %q", tt.r, got, tt.str)
		}
		if tt.r.Open() != tt.open || tt.r.IsAll() != tt.all || tt.r.Empty() != tt.empty {
			t.Errorf("%v: Open %v IsAll %v Empty %v, want %v %v %v", tt.r, tt.r.Open(), tt.r.IsAll(), tt.r.Empty(), tt.open, tt.all, tt.empty)
		}
		if tt.in >= 0 && !tt.r.Contains(tt.in) {
			t.Errorf("%v does not contain %d", tt.r, tt.in)
		}
		if tt.r.Contains(tt.out) {
			t.Errorf("%v contains %d", tt.r, tt.out)
		}
		if tt.past >= 0 && !tt.r.Past(tt.past) {
			t.Errorf("%v: %d is not past it", tt.r, tt.past)
		}
		if tt.before >= 0 && (tt.r.Past(tt.before) || tt.r.Contains(tt.before)) {
			t.Errorf("%v: %d before it is past or inside it", tt.r, tt.before)
		}
	}
	if All().Past(1<<62) || Ticks(0, 0).Past(0) {
		t.Error("Past is true inside the range")
	}
}

func TestRangeClamp(t *testing.T) {
	tests := []struct {
		r    Range
		last int64
		want Range
	}{
		{All(), 99, Ticks(0, 99)},
		{Ticks(-5, 10), 99, Ticks(0, 10)},
		{Ticks(50, 500), 99, Ticks(50, 99)},
		{Ticks(99, -1), 99, Ticks(99, 99)},
		{Ticks(100, -1), 99, empty},
		{Ticks(100, 200), 99, empty},
		{Ticks(5, 2), 99, empty},
		{All(), -1, empty},
	}
	for _, tt := range tests {
		got := tt.r.Clamp(tt.last)
		if got != tt.want {
			t.Errorf("%v.Clamp(%d) = %v, want %v", tt.r, tt.last, got, tt.want)
		}
		if got.Open() {
			t.Errorf("%v.Clamp(%d) is open", tt.r, tt.last)
		}
		if tt.want == empty && !got.Empty() {
			t.Errorf("%v.Clamp(%d) = %v is not empty", tt.r, tt.last, got)
		}
	}
}

func TestCheckChunk(t *testing.T) {
	prev := &Chunk{StartTick: 10, Ticks: 5}
	tests := []struct {
		prev   *Chunk
		c      Chunk
		n      int
		wantOK bool
	}{
		{nil, Chunk{StartTick: 0, Ticks: 1}, 0, true},
		{prev, Chunk{StartTick: 15, Ticks: 3}, 100, true},
		{prev, Chunk{StartTick: 11, Ticks: 3}, MaxChunkBytes, true},
		{prev, Chunk{StartTick: 10, Ticks: 3}, 1, false}, // start does not increase
		{prev, Chunk{StartTick: 9, Ticks: 3}, 1, false},  // goes back
		{nil, Chunk{StartTick: 0, Ticks: 0}, 1, false},   // covers no tick
		{nil, Chunk{StartTick: 0, Ticks: -2}, 1, false},  // negative count
		{nil, Chunk{StartTick: -1, Ticks: 2}, 1, false},  // before the recording
		{nil, Chunk{StartTick: 0, Ticks: 1}, MaxChunkBytes + 1, false},
	}
	for _, tt := range tests {
		err := CheckChunk(tt.prev, tt.c, tt.n)
		if (err == nil) != tt.wantOK {
			t.Errorf("CheckChunk(%+v, %+v, %d) = %v, want ok=%v", tt.prev, tt.c, tt.n, err, tt.wantOK)
		}
	}
}

// FuzzRange checks the Range methods against their definition on any
// range, recording length and tick: Contains is "From <= tick <= To, or no
// To", Past and Contains never both hold, and Clamp keeps exactly the ticks
// of [0, last] that the range holds.
func FuzzRange(f *testing.F) {
	f.Add(int64(0), int64(-1), int64(99), int64(5))
	f.Add(int64(10), int64(20), int64(15), int64(16))
	f.Add(int64(5), int64(2), int64(99), int64(3))
	f.Add(int64(-3), int64(-1), int64(-1), int64(0))
	f.Fuzz(func(t *testing.T, from, to, last, tick int64) {
		r := Ticks(from, to)
		want := tick >= from && (to < 0 || tick <= to)
		if r.Contains(tick) != want {
			t.Fatalf("%v.Contains(%d) = %v, want %v", r, tick, !want, want)
		}
		if r.Past(tick) && r.Contains(tick) {
			t.Fatalf("%v: tick %d both past and inside", r, tick)
		}
		if r.Empty() && r.Contains(tick) {
			t.Fatalf("empty %v contains %d", r, tick)
		}
		c := r.Clamp(last)
		if c.Open() {
			t.Fatalf("%v.Clamp(%d) = %v is open", r, last, c)
		}
		inRec := tick >= 0 && tick <= last
		if c.Contains(tick) != (want && inRec) {
			t.Fatalf("%v.Clamp(%d) = %v: Contains(%d) = %v, want %v", r, last, c, tick, c.Contains(tick), want && inRec)
		}
	})
}
