package memdir

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// MkdirTemp makes a new private directory, in /dev/shm where memDir finds
// room there.
func TestMkdirTemp(t *testing.T) {
	d, err := MkdirTemp("scratch-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(d)
	fi, err := os.Stat(d)
	if err != nil || !fi.IsDir() {
		t.Fatalf("MkdirTemp gave %q: %v", d, err)
	}
	if !strings.HasPrefix(filepath.Base(d), "scratch-test-") {
		t.Errorf("MkdirTemp gave %q, want a name starting scratch-test-", d)
	}
	want := os.TempDir()
	if m := memDir(); m != "" {
		want = m
	} else if runtime.GOOS == "linux" {
		t.Log("no tmpfs with room at /dev/shm: the system's temporary directory")
	}
	if filepath.Dir(d) != filepath.Clean(want) {
		t.Errorf("MkdirTemp gave %q, want it in %s", d, want)
	}
	if err := os.WriteFile(filepath.Join(d, "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
}
