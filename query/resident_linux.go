// Keeping a bulk build's resident size bounded on Linux: the catalog
// (bbolt) and the index's segments (zap) are read through shared file
// mappings, and every page a rebuild reads stays in the process's
// resident set until the kernel wants it back: a million recordings
// took 2.3 GiB of mapped pages besides the process's own 192 MiB.

package query

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// trimMappings drops the pages of the process's shared file mappings
// from its resident set (madvise MADV_DONTNEED). They stay in the page
// cache, and a later read maps them again without reading the disk; a
// shared mapping's pages are the file's, so nothing is lost (a private
// mapping's would be: those are left alone). Only reading the list of
// mappings can fail.
func trimMappings() error {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return fmt.Errorf("query: trim mappings: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		// 7f12a000-7f12b000 r--s 00000000 fd:01 1234   /path
		f := bytes.Fields(sc.Bytes())
		if len(f) < 6 || len(f[1]) != 4 || f[1][3] != 's' || string(f[4]) == "0" {
			continue
		}
		lo, hi, ok := bytes.Cut(f[0], []byte("-"))
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(string(lo), 16, 64)
		end, err2 := strconv.ParseUint(string(hi), 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		// A mapping unmapped since the list was read (a segment a merge
		// replaced) gives ENOMEM; another one is as it was: go on.
		syscall.Syscall(syscall.SYS_MADVISE, uintptr(start), uintptr(end-start), syscall.MADV_DONTNEED)
	}
	return nil
}
