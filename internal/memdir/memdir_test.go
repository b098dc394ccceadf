package memdir

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
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
	defer RemoveAll(d)
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

// A directory whose maker is gone (a test binary ended by -timeout) is
// removed by the next MkdirTemp; one of a live process stays; RemoveAll
// leaves nothing beside it.
func TestMkdirTempSweepsDirsOfEndedProcesses(t *testing.T) {
	dir := memDir()
	if dir == "" {
		t.Skip("no tmpfs with room at /dev/shm: nothing is made in memory")
	}
	// A process that has ended: its pid is free until reused.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := cmd.Process.Pid
	mk := func(pid int) string {
		d, err := os.MkdirTemp(dir, "scratch-sweep-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { RemoveAll(d) })
		if err := os.WriteFile(filepath.Join(d, "data"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(d+ownerSuffix, []byte(strconv.Itoa(pid)), 0o600); err != nil {
			t.Fatal(err)
		}
		return d
	}
	left, live := mk(dead), mk(os.Getpid())
	d, err := MkdirTemp("scratch-test-")
	if err != nil {
		t.Fatal(err)
	}
	if alive(dead) {
		t.Skipf("pid %d was reused before the sweep", dead)
	}
	for _, p := range []string{left, left + ownerSuffix} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s of a process that is gone: still there (%v)", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(live, "data")); err != nil {
		t.Errorf("the live process's directory: %v", err)
	}
	if err := RemoveAll(d); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{d, d + ownerSuffix} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s after RemoveAll: %v", p, err)
		}
	}
}
