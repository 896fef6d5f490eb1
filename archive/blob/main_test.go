package blob_test

import (
	"testing"

	"github.com/replayarchive/replay/archive/blob/blobtest"
)

// TestMain lets the put-if-absent race re-run this binary as its child
// processes.
func TestMain(m *testing.M) { blobtest.Main(m) }
