package replay

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/internal/units"
)

// ErrPastEnd is returned for a tick range that starts after the recording's
// last tick.
var ErrPastEnd = errors.New("the range starts after the recording ends")

// ErrEmptyRange is returned for a tick range that ends before it starts.
var ErrEmptyRange = errors.New("the range ends before it starts")

// ErrBadTick is returned by ParseTick for what is neither a tick nor an
// offset from the recording's start: a caller's mistake.
var ErrBadTick = errors.New("want a tick or an offset like 1m04s")

// ErrNoConversion is returned for a conversion to a format the recording's
// codec does not write (its own format among them: export that whole).
var ErrNoConversion = errors.New("cannot convert to that format")

// Recording is an archived recording opened for reading, with the codec of
// its format: frames, whole exports, clips and conversions.
type Recording struct {
	*archive.Recording
	codec formats.Codec
}

// Recording opens the recording that ref (an id or a unique prefix) names.
func (x *Archive) Recording(ref string) (*Recording, error) {
	id, err := x.a.Resolve(ref)
	if err != nil {
		return nil, err
	}
	r, err := x.a.Open(id)
	if err != nil {
		return nil, err
	}
	c := x.Codec(r.Format())
	if c == nil {
		return nil, fmt.Errorf("recording %s: no codec for format %q in this build", id, r.Format())
	}
	return &Recording{Recording: r, codec: c}, nil
}

// Codec returns the codec of the recording's format.
func (r *Recording) Codec() formats.Codec { return r.codec }

// LastTick returns the recording's last tick (-1 when it has none).
func (r *Recording) LastTick() int64 {
	cs := r.Chunks()
	if len(cs) == 0 {
		return -1
	}
	return cs[len(cs)-1].EndTick() - 1
}

// CanClip reports whether the recording's format can be cut into a valid
// shorter file.
func (r *Recording) CanClip() bool { return formats.CanClip(r.codec) }

// checkRange refuses a range that starts past the end and returns the
// range clamped to what exists, so a summary never claims ticks that are
// not there.
func (r *Recording) checkRange(from, to int64) (formats.Range, error) {
	last := r.LastTick()
	from = max(from, 0)
	if from > last {
		return formats.Range{}, fmt.Errorf("tick %d: %w (last tick %d)", from, ErrPastEnd, last)
	}
	span := formats.Ticks(from, to).Clamp(last)
	if span.Empty() {
		return formats.Range{}, fmt.Errorf("tick %d to %d: %w", from, to, ErrEmptyRange)
	}
	return span, nil
}

// Frames decodes the ticks in [from, to] (to < 0: to the end), reading only
// the chunks that cover them, and calls emit for each frame.
func (r *Recording) Frames(ctx context.Context, from, to int64, emit func(formats.Frame) error) error {
	span, err := r.checkRange(from, to)
	if err != nil {
		return err
	}
	return r.codec.Frames(ctx, r, span, emit)
}

// Export writes the whole recording. Without redact it is the original
// file, byte for byte, verified against its sha256 as it streams. With
// redact, formats that carry secrets (passwords, timeout codes) are
// rewritten as a valid file of the format with the secrets replaced;
// formats without secrets are written whole.
func (r *Recording) Export(ctx context.Context, w io.Writer, redact bool) error {
	if red, ok := r.codec.(formats.Redactor); ok && redact {
		return red.Redact(ctx, r, formats.All(), w)
	}
	_, err := r.WriteTo(ctx, w)
	return err
}

// Clip writes a valid native file holding the ticks in [from, to]
// (to < 0: to the end), redacted like Export when redact is set. It returns
// the range it wrote, clamped to the recording. A format that cannot clip
// returns an error wrapping formats.ErrClipUnsupported.
func (r *Recording) Clip(ctx context.Context, from, to int64, w io.Writer, redact bool) (int64, int64, error) {
	if !r.CanClip() {
		return 0, 0, fmt.Errorf("%s: %w; export the whole recording instead", r.Format(), formats.ErrClipUnsupported)
	}
	span, err := r.checkRange(from, to)
	if err != nil {
		return 0, 0, err
	}
	if red, ok := r.codec.(formats.Redactor); ok && redact {
		return span.From, span.To, red.Redact(ctx, r, span, w)
	}
	return span.From, span.To, r.codec.Clip(ctx, r, span, w)
}

// ConvertFormats lists the formats the recording can be converted to.
func (r *Recording) ConvertFormats() []string {
	if ex, ok := r.codec.(formats.Exporter); ok {
		return ex.ExportFormats()
	}
	return nil
}

// Convert writes the ticks in [from, to] as another format the codec can
// write (an .echoreplay session as .butter), with format-specific opts.
// Conversions rewrite the file from decoded frames, so they carry no more
// than the target format holds.
func (r *Recording) Convert(ctx context.Context, format string, from, to int64, opts map[string]string, w io.Writer) error {
	ex, ok := r.codec.(formats.Exporter)
	if !ok || !slices.Contains(ex.ExportFormats(), format) {
		can := append([]string{r.Format()}, r.ConvertFormats()...)
		return fmt.Errorf("%s to %q: %w (can write: %s)", r.Format(), format, ErrNoConversion, strings.Join(can, ", "))
	}
	span, err := r.checkRange(from, to)
	if err != nil {
		return err
	}
	return ex.Export(ctx, r, format, span, opts, w)
}

// TickAt returns the tick at offset d from the recording's start, from the
// chunk index's times and the tick rate.
func (r *Recording) TickAt(d time.Duration) int64 {
	cs := r.Chunks()
	if len(cs) == 0 || d <= 0 {
		return 0
	}
	i, _ := slices.BinarySearchFunc(cs, d, func(c formats.Chunk, d time.Duration) int {
		return cmp.Compare(c.Time, d)
	})
	if i == len(cs) || cs[i].Time > d {
		i--
	}
	if i < 0 {
		return 0
	}
	c := cs[i]
	tick := c.StartTick
	tick += ticksIn(d-c.Time, r.Meta().TickRate)
	return min(tick, r.LastTick())
}

// ParseTick reads what a user gives for a tick: a tick number ("1500") or
// an offset from the recording's start ("1m04s", "90s", "2500ms"), which
// TickAt turns into a tick. The command line's --from and --to and the
// API's from and to parameters read it alike.
func (r *Recording) ParseTick(v string) (int64, error) {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0, fmt.Errorf("tick %d must not be negative: %w", n, ErrBadTick)
		}
		return n, nil
	}
	d, err := units.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%q: %w", v, ErrBadTick)
	}
	if m := r.Meta(); d > 0 && m.Duration <= 0 && m.TickRate <= 0 {
		return 0, fmt.Errorf("%s: the recording has no times (no tick rate), give a tick (0 to %d): %w", v, r.LastTick(), ErrBadTick)
	}
	return r.TickAt(d), nil
}

// ParseFrom is ParseTick for where a range starts: an offset past the
// recording's end is refused rather than taken as its last tick (a clip
// "from 1m" of an 18 s recording would be its last tick alone).
func (r *Recording) ParseFrom(v string) (int64, error) {
	tick, err := r.ParseTick(v)
	if err != nil {
		return 0, err
	}
	if _, perr := strconv.ParseInt(v, 10, 64); perr != nil {
		if d, _ := units.ParseDuration(v); d > r.Meta().Duration && r.Meta().Duration > 0 {
			return 0, fmt.Errorf("%s is past the recording's end (%s, tick %d): %w", v, r.Meta().Duration, r.LastTick(), ErrBadTick)
		}
	}
	return tick, nil
}

// ticksIn is how many whole ticks at rate per second fit in d. A whole
// rate is counted in integers: the float of d in seconds times the rate
// lands just under a whole tick for most offsets (2m0s at tick 6000 of a
// teehistorian chunk gave tick 5999, and the clip a search hit offered
// stopped before its event).
func ticksIn(d time.Duration, rate float64) int64 {
	if rate <= 0 || d <= 0 {
		return 0
	}
	if n := int64(rate); float64(n) == rate {
		s := int64(d / time.Second)
		return s*n + int64(d%time.Second)*n/int64(time.Second)
	}
	return int64(float64(d) * rate / float64(time.Second))
}

// tickSpan is the time n ticks at rate per second take (see ticksIn).
func tickSpan(n int64, rate float64) time.Duration {
	if rate <= 0 || n <= 0 {
		return 0
	}
	if r := int64(rate); float64(r) == rate {
		return time.Duration(n/r)*time.Second + time.Duration(n%r)*time.Second/time.Duration(r)
	}
	return time.Duration(float64(n) * float64(time.Second) / rate)
}

// TimeAt returns the offset of tick from the recording's start.
func (r *Recording) TimeAt(tick int64) time.Duration {
	cs := r.Chunks()
	i := formats.FindChunk(cs, tick)
	if i >= len(cs) {
		i = len(cs) - 1
	}
	if i < 0 {
		return 0
	}
	c := cs[i]
	return c.Time + tickSpan(tick-c.StartTick, r.Meta().TickRate)
}

// Extension returns the file name extension of the recording's format.
func (r *Recording) Extension() string { return Extension(r.Format()) }

// Extension returns the usual file name extension of format name.
func Extension(format string) string {
	switch format {
	case "sc2replay":
		return ".SC2Replay"
	case "":
		return ".bin"
	}
	return "." + format
}
