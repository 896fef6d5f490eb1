package formats

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

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

// fakeSource serves chunks of ten ticks each and records which it read.
type fakeSource struct {
	chunks []Chunk
	read   []int
}

func (f *fakeSource) Meta() *Metadata { return &Metadata{} }
func (f *fakeSource) Header() []byte  { return nil }
func (f *fakeSource) Trailer() []byte { return nil }
func (f *fakeSource) Chunks() []Chunk { return f.chunks }
func (f *fakeSource) ReadChunk(_ context.Context, i int) ([]byte, []byte, error) {
	f.read = append(f.read, i)
	return []byte{byte(i)}, nil, nil
}

func TestEachChunk(t *testing.T) {
	tests := []struct {
		from, to int64
		want     []int
	}{
		{0, -1, []int{0, 1, 2, 3}},
		{-5, 5, []int{0}},
		{15, 25, []int{1, 2}},
		{19, 20, []int{1, 2}},
		{39, -1, []int{3}},
		{40, -1, nil},
		{5, 2, nil}, // to before the chunk that holds from
	}
	for _, tt := range tests {
		src := &fakeSource{}
		for i := 0; i < 4; i++ {
			src.chunks = append(src.chunks, Chunk{StartTick: int64(i * 10), Ticks: 10})
		}
		var got []int
		err := EachChunk(context.Background(), src, Ticks(tt.from, tt.to), func(i int, c Chunk, native, _ []byte) error {
			if int(native[0]) != i || c.StartTick != int64(i*10) {
				t.Errorf("chunk %d got bytes %v, entry %+v", i, native, c)
			}
			got = append(got, i)
			return nil
		})
		if err != nil || fmt.Sprint(got) != fmt.Sprint(tt.want) || fmt.Sprint(src.read) != fmt.Sprint(tt.want) {
			t.Errorf("EachChunk(%d, %d) visited %v, read %v (%v), want %v", tt.from, tt.to, got, src.read, err, tt.want)
		}
	}
	// An error from fn stops the walk.
	src := &fakeSource{chunks: []Chunk{{StartTick: 0, Ticks: 1}, {StartTick: 1, Ticks: 1}}}
	stop := errors.New("stop")
	if err := EachChunk(context.Background(), src, All(), func(int, Chunk, []byte, []byte) error { return stop }); err != stop || len(src.read) != 1 {
		t.Errorf("stop: %v after %d reads", err, len(src.read))
	}
	// ErrStop, even wrapped, ends the walk without an error.
	src = &fakeSource{chunks: []Chunk{{StartTick: 0, Ticks: 1}, {StartTick: 1, Ticks: 1}}}
	err := EachChunk(context.Background(), src, All(), func(int, Chunk, []byte, []byte) error {
		return fmt.Errorf("done: %w", ErrStop)
	})
	if err != nil || len(src.read) != 1 {
		t.Errorf("ErrStop: %v after %d reads, want nil after 1", err, len(src.read))
	}
}
