package kafkabroker

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/throttler/throttler/internal/testsupport/testwait"
)

// orphanChildEnv tells this test binary, run again as a child by
// TestNoOrphanWhenKilled, to start a process and wait to be killed: "sleep"
// starts `sleep 600` as the broker's JVM is started, "kafka" a broker.
const orphanChildEnv = "KAFKABROKER_ORPHAN_CHILD"

// orphanDirEnv is the directory of the child's broker.
const orphanDirEnv = "KAFKABROKER_ORPHAN_DIR"

// TestOrphanChild is the child's body; it does nothing in a normal run.
func TestOrphanChild(t *testing.T) {
	kind := os.Getenv(orphanChildEnv)
	if kind == "" {
		t.Skip("the child of TestNoOrphanWhenKilled")
	}
	var pid int
	switch kind {
	case "sleep":
		p, err := spawn(exec.Command("sleep", "600"))
		if err != nil {
			t.Fatal(err)
		}
		pid = p.cmd.Process.Pid
	case "kafka":
		b, err := New(os.Getenv(orphanDirEnv)) // the parent's: a SIGKILLed test removes no directory
		if err != nil {
			t.Fatal(err)
		}
		pid = b.PID()
	}
	fmt.Printf("PID %d\n", pid)
	time.Sleep(10 * time.Minute) // real time: the parent SIGKILLs this process long before
}

// A test binary SIGKILLed while it runs a broker leaves no JVM behind:
// the kernel kills the JVM with it. The child is this test binary running
// TestOrphanChild; the parent kills it as soon as it has printed its
// broker's PID, then waits for that PID to be gone.
func TestNoOrphanWhenKilled(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal is Linux's")
	}
	for _, kind := range []string{"sleep", "kafka"} {
		t.Run(kind, func(t *testing.T) {
			if kind == "kafka" {
				Skip(t)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestOrphanChild$", "-test.count=1", "-test.timeout=5m")
			cmd.Env = append(os.Environ(), orphanChildEnv+"="+kind, orphanDirEnv+"="+t.TempDir())
			cmd.Stderr = os.Stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
			pid := 0
			sc := bufio.NewScanner(out)
			for pid == 0 && sc.Scan() {
				if s, ok := strings.CutPrefix(sc.Text(), "PID "); ok {
					pid, _ = strconv.Atoi(s)
				}
			}
			if pid <= 0 {
				t.Fatalf("the child printed no PID (%v)", sc.Err())
			}
			if !alive(pid) {
				t.Fatalf("process %d is not running before the kill", pid)
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			if !testwait.Poll(30*time.Second, 50*time.Millisecond, func() bool { return !alive(pid) }) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				t.Fatalf("process %d outlived the test binary that started it", pid)
			}
		})
	}
}

// alive reports whether pid is a running process (a zombie is not: it has
// exited and waits for init to reap it).
func alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] != 'Z'
}
