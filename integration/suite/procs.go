package suite

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/throttler/throttler/internal/memdir"
	"github.com/throttler/throttler/internal/testsupport/deathsig"
)

// Bin is the throttler binary built once for the package's tests.
var Bin string

func Main(m *testing.M) {
	dir, err := os.MkdirTemp("", "throttler-it-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if prebuilt := os.Getenv("THROTTLER_TEST_BIN"); prebuilt != "" {
		// Another build under test (an older version, to see what a
		// test finds there).
		Bin = prebuilt
		code := m.Run()
		os.RemoveAll(dir)
		os.Exit(code)
	}
	Bin = filepath.Join(dir, "throttler")
	build := exec.Command("go", "build", "-o", Bin, "github.com/throttler/throttler/cmd/throttler")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building throttler:", err)
		os.Exit(1)
	}
	code := m.Run()
	SharedKafka.Close()
	SharedContainer.Close()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Proc is a throttler process started by a test.
type Proc struct {
	Name string
	Cmd  *exec.Cmd
	Out  *Lines // stdout
	Err  *Lines // stderr
	Done chan struct{}
	Werr error
}

// Lines collects a stream's lines for the test to search.
type Lines struct {
	Mu  sync.Mutex
	All []string
}

func (l *Lines) Add(s string) {
	l.Mu.Lock()
	l.All = append(l.All, s)
	l.Mu.Unlock()
}

// Find returns the first line containing sub.
func (l *Lines) Find(sub string) (string, bool) {
	l.Mu.Lock()
	defer l.Mu.Unlock()
	for _, s := range l.All {
		if strings.Contains(s, sub) {
			return s, true
		}
	}
	return "", false
}

// Count returns how many lines contain sub.
func (l *Lines) Count(sub string) int {
	l.Mu.Lock()
	defer l.Mu.Unlock()
	n := 0
	for _, s := range l.All {
		if strings.Contains(s, sub) {
			n++
		}
	}
	return n
}

func (l *Lines) String() string {
	l.Mu.Lock()
	defer l.Mu.Unlock()
	all := l.All
	if len(all) > 40 {
		all = all[len(all)-40:]
	}
	return strings.Join(all, "\n")
}

// Start runs the throttler binary with args; the process is killed when
// the test ends if it is still running.
func Start(t *testing.T, name string, args ...string) *Proc {
	t.Helper()
	p := &Proc{Name: name, Cmd: exec.Command(Bin, args...), Out: &Lines{}, Err: &Lines{}, Done: make(chan struct{})}
	// The outputs are pipes of the test's own, read to their end apart
	// from the wait, so that Wait closes none of them before its lines
	// are read.
	var wg sync.WaitGroup
	var writers []*os.File
	for _, l := range []*Lines{p.Out, p.Err} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatalf("start %s: %v", name, err)
		}
		writers = append(writers, w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer r.Close()
			sc := bufio.NewScanner(r)
			sc.Buffer(make([]byte, 64<<10), 64<<20) // a line of megabytes is read (and reported), not a stalled pipe
			for sc.Scan() {
				l.Add(sc.Text())
			}
		}()
	}
	p.Cmd.Stdout, p.Cmd.Stderr = writers[0], writers[1]
	// The process dies with the test binary, also when go test's timeout
	// panic runs no cleanup.
	err := deathsig.Spawn(p.Cmd, func(err error) {
		wg.Wait()
		p.Werr = err
		close(p.Done)
	})
	for _, w := range writers {
		w.Close() // the child holds its own copies
	}
	if err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() {
		select {
		case <-p.Done:
		default:
			_ = p.Cmd.Process.Kill()
			<-p.Done
		}
		if t.Failed() {
			t.Logf("--- %s stderr (tail):\n%s", name, p.Err)
		}
		KeepLog(t, name, p.Err)
	})
	return p
}

// KeepLog writes the whole stderr of a process to DIR/TEST.NAME.log (then
// TEST.NAME.2.log, … for its restarts) when THROTTLER_TEST_LOGS=DIR is
// set, to read a run's story after the fact.
func KeepLog(t *testing.T, name string, l *Lines) {
	dir := os.Getenv("THROTTLER_TEST_LOGS")
	if dir == "" {
		return
	}
	l.Mu.Lock()
	text := strings.Join(l.All, "\n")
	l.Mu.Unlock()
	// A restarted process keeps its name: each run gets a file of its own.
	base := filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_")+"."+name)
	file := base + ".log"
	for i := 2; ; i++ {
		if _, err := os.Stat(file); err != nil {
			break
		}
		file = fmt.Sprintf("%s.%d.log", base, i)
	}
	if err := os.WriteFile(file, []byte(text+"\n"), 0o644); err != nil {
		t.Logf("THROTTLER_TEST_LOGS: %v", err)
	}
}

// Exited reports whether the process has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.Done:
		return true
	default:
		return false
	}
}

// signal sends sig and waits up to timeout for the process to exit.
func (p *Proc) Stop(t *testing.T, sig syscall.Signal, timeout time.Duration) error {
	t.Helper()
	_ = p.Cmd.Process.Signal(sig)
	select {
	case <-p.Done:
		return p.Werr
	case <-time.After(timeout):
		_ = p.Cmd.Process.Kill()
		<-p.Done
		return fmt.Errorf("%s did not exit within %v of %v", p.Name, timeout, sig)
	}
}

// WaitLine polls the process's stdout and stderr for a line containing sub.
func (p *Proc) WaitLine(t *testing.T, sub string, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if s, ok := p.Out.Find(sub); ok {
			return s
		}
		if s, ok := p.Err.Find(sub); ok {
			return s
		}
		select {
		case <-p.Done:
			t.Fatalf("%s exited (%v) before printing %q:\n%s\n%s", p.Name, p.Werr, sub, p.Out, p.Err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("%s printed no %q within %v:\n%s", p.Name, sub, timeout, p.Err)
	return ""
}

// StartBroker starts `throttler broker` on a free loopback port with a data
// dir and returns its address; extra are more flags of the command.
func StartBroker(t *testing.T, partitions int, extra ...string) (*Proc, string) {
	t.Helper()
	return StartBrokerAt(t, "127.0.0.1:0", BrokerDir(t), partitions, extra...)
}

// BrokerDir returns a new data dir for a `throttler broker` of t, removed
// when t ends: in memory where there is room (memdir.MkdirTemp says why).
func BrokerDir(t *testing.T) string {
	t.Helper()
	dir, err := memdir.MkdirTemp("throttler-test-broker-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { memdir.RemoveAll(dir) })
	return dir
}

// StartBrokerAt starts `throttler broker` on addr with the data dir dir
// and returns the address it prints; extra are more flags of the command.
func StartBrokerAt(t *testing.T, addr, dir string, partitions int, extra ...string) (*Proc, string) {
	t.Helper()
	p := Start(t, "broker", append([]string{"broker", "--addr", addr, "--data-dir", dir,
		"--partitions", fmt.Sprint(partitions), "--log-level", "warn"}, extra...)...)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		p.Out.Mu.Lock()
		n := len(p.Out.All)
		var addr string
		if n > 0 {
			addr = strings.TrimSpace(p.Out.All[0])
		}
		p.Out.Mu.Unlock()
		if addr != "" {
			return p, addr
		}
		select {
		case <-p.Done:
			t.Fatalf("broker exited: %v\n%s", p.Werr, p.Err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatal("broker printed no address")
	return nil, ""
}

func WriteFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

var _ = bytes.NewReader

var _ = context.Background
