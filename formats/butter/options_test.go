package butter

import (
	"errors"
	"testing"

	"github.com/replayarchive/replay/formats"
)

// TestBadExportOptions: an option the format does not take, or a value it
// cannot use, is the caller's mistake (formats.ErrBadOption), which a
// service answers with 400; good options parse.
func TestBadExportOptions(t *testing.T) {
	for _, opts := range []map[string]string{
		{"nonsense": "1"},
		{"keyframe-interval": "0"},
		{"keyframe-interval": "x"},
		{"compression": "lzma"},
	} {
		if _, err := WriterOptionsFrom(opts); !errors.Is(err, formats.ErrBadOption) {
			t.Errorf("%v: %v, want ErrBadOption", opts, err)
		}
	}
	if wo, err := WriterOptionsFrom(map[string]string{"keyframe-interval": "30", "compression": "zstd_3"}); err != nil || wo.KeyframeInterval != 30 {
		t.Errorf("good options: %+v %v", wo, err)
	}
}
