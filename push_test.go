package replay_test

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/replayarchive/replay"
)

func TestCheckPushSource(t *testing.T) {
	seg := strings.Repeat("x", 128)
	for _, c := range []struct {
		source string
		ok     bool
	}{
		{"a", true},
		{"gs1/teehistorian/0e3f.teehistorian", true},
		{"a-b_c~d.e/F9", true},
		{"1/2/3/4/5/6/7/8", true},
		{seg, true},
		{"x..y", true},
		{"nul.txt", runtime.GOOS != "windows"},
		{"com1", runtime.GOOS != "windows"},
		{"a.", runtime.GOOS != "windows"},

		{"", false},
		{".", false},
		{"..", false},
		{"a/../b", false},
		{"a/./b", false},
		{".git/config", false},
		{"/a", false},
		{"a/", false},
		{"a//b", false},
		{"1/2/3/4/5/6/7/8/9", false},
		{seg + "x", false},
		{"a b", false},
		{"a\\b", false},
		{"a:b", false},
		{"a\x00b", false},
		{"é", false},
	} {
		err := replay.CheckPushSource(c.source)
		if c.ok != (err == nil) || err != nil && !errors.Is(err, replay.ErrBadPush) {
			t.Errorf("CheckPushSource(%q): %v, want ok %v", c.source, err, c.ok)
		}
	}
}
