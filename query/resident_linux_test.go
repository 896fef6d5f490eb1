package query

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// TestTrimMappings: the pages of a shared file mapping that were read
// leave the resident set, and read the same afterwards; a private
// mapping keeps its pages, written ones included.
func TestTrimMappings(t *testing.T) {
	const size = 4 << 20
	path := filepath.Join(t.TempDir(), "f")
	data := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	shared, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(shared)
	private, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(private)
	sum := 0
	for i := 0; i < size; i += 4096 {
		sum += int(shared[i])
		private[i] = 'x'
	}
	if rss := mappingRss(t, shared); rss < size/2 {
		t.Fatalf("shared mapping: %d bytes resident after reading it, want most of %d", rss, size)
	}
	if err := trimMappings(); err != nil {
		t.Fatal(err)
	}
	if rss := mappingRss(t, shared); rss > size/8 {
		t.Errorf("shared mapping: %d bytes resident after trimMappings", rss)
	}
	if !bytes.Equal(shared, data) {
		t.Error("shared mapping reads otherwise after trimMappings")
	}
	for i := 0; i < size; i += 4096 {
		if private[i] != 'x' {
			t.Fatalf("private mapping lost its write at %d", i)
		}
	}
	if sum != size/4096*'0' {
		t.Errorf("read %d", sum)
	}
}

// mappingRss reads the resident bytes of the mapping that starts at b's
// first byte from /proc/self/smaps.
func mappingRss(t *testing.T, b []byte) int {
	t.Helper()
	start := fmt.Sprintf("%x-", uintptr(unsafe.Pointer(&b[0])))
	raw, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	in := false
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, "-") && !strings.HasSuffix(strings.Fields(line)[0], ":") {
			in = strings.HasPrefix(line, start)
			continue
		}
		if in && strings.HasPrefix(line, "Rss:") {
			kb, err := strconv.Atoi(strings.Fields(line)[1])
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no mapping at %s in /proc/self/smaps", start)
	return 0
}
