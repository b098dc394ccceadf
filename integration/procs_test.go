package integration

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// bin is the throttler binary built once for the package's tests.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "throttler-it-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if prebuilt := os.Getenv("THROTTLER_TEST_BIN"); prebuilt != "" {
		// Another build under test (an older version, to see what a
		// test finds there).
		bin = prebuilt
		code := m.Run()
		os.RemoveAll(dir)
		os.Exit(code)
	}
	bin = filepath.Join(dir, "throttler")
	build := exec.Command("go", "build", "-o", bin, "github.com/throttler/throttler/cmd/throttler")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building throttler:", err)
		os.Exit(1)
	}
	code := m.Run()
	sharedKafka.close()
	sharedContainer.close()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is a throttler process started by a test.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  *lines // stdout
	err  *lines // stderr
	done chan struct{}
	werr error
}

// lines collects a stream's lines for the test to search.
type lines struct {
	mu  sync.Mutex
	all []string
}

func (l *lines) add(s string) {
	l.mu.Lock()
	l.all = append(l.all, s)
	l.mu.Unlock()
}

// find returns the first line containing sub.
func (l *lines) find(sub string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.all {
		if strings.Contains(s, sub) {
			return s, true
		}
	}
	return "", false
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	all := l.all
	if len(all) > 40 {
		all = all[len(all)-40:]
	}
	return strings.Join(all, "\n")
}

// start runs the throttler binary with args; the process is killed when
// the test ends if it is still running.
func start(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, cmd: exec.Command(bin, args...), out: &lines{}, err: &lines{}, done: make(chan struct{})}
	stdout, _ := p.cmd.StdoutPipe()
	stderr, _ := p.cmd.StderrPipe()
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	var wg sync.WaitGroup
	for _, s := range []struct {
		r io.Reader
		l *lines
	}{{stdout, p.out}, {stderr, p.err}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := bufio.NewScanner(s.r)
			sc.Buffer(make([]byte, 64<<10), 64<<20) // a line of megabytes is read (and reported), not a stalled pipe
			for sc.Scan() {
				s.l.add(sc.Text())
			}
		}()
	}
	go func() {
		wg.Wait()
		p.werr = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("--- %s stderr (tail):\n%s", name, p.err)
		}
		keepLog(t, name, p.err)
	})
	return p
}

// keepLog writes the whole stderr of a process to DIR/TEST.NAME.log (then
// TEST.NAME.2.log, … for its restarts) when THROTTLER_TEST_LOGS=DIR is
// set, to read a run's story after the fact.
func keepLog(t *testing.T, name string, l *lines) {
	dir := os.Getenv("THROTTLER_TEST_LOGS")
	if dir == "" {
		return
	}
	l.mu.Lock()
	text := strings.Join(l.all, "\n")
	l.mu.Unlock()
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

// exited reports whether the process has exited.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signal sends sig and waits up to timeout for the process to exit.
func (p *proc) stop(t *testing.T, sig syscall.Signal, timeout time.Duration) error {
	t.Helper()
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
		return p.werr
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s did not exit within %v of %v", p.name, timeout, sig)
	}
}

// waitLine polls the process's stdout and stderr for a line containing sub.
func (p *proc) waitLine(t *testing.T, sub string, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if s, ok := p.out.find(sub); ok {
			return s
		}
		if s, ok := p.err.find(sub); ok {
			return s
		}
		select {
		case <-p.done:
			t.Fatalf("%s exited (%v) before printing %q:\n%s\n%s", p.name, p.werr, sub, p.out, p.err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("%s printed no %q within %v:\n%s", p.name, sub, timeout, p.err)
	return ""
}

// startBroker starts `throttler broker` on a free loopback port with a data
// dir and returns its address; extra are more flags of the command.
func startBroker(t *testing.T, partitions int, extra ...string) (*proc, string) {
	t.Helper()
	return startBrokerAt(t, "127.0.0.1:0", t.TempDir(), partitions, extra...)
}

// startBrokerAt starts `throttler broker` on addr with the data dir dir
// and returns the address it prints; extra are more flags of the command.
func startBrokerAt(t *testing.T, addr, dir string, partitions int, extra ...string) (*proc, string) {
	t.Helper()
	p := start(t, "broker", append([]string{"broker", "--addr", addr, "--data-dir", dir,
		"--partitions", fmt.Sprint(partitions), "--log-level", "warn"}, extra...)...)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		p.out.mu.Lock()
		n := len(p.out.all)
		var addr string
		if n > 0 {
			addr = strings.TrimSpace(p.out.all[0])
		}
		p.out.mu.Unlock()
		if addr != "" {
			return p, addr
		}
		select {
		case <-p.done:
			t.Fatalf("broker exited: %v\n%s", p.werr, p.err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatal("broker printed no address")
	return nil, ""
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

var _ = bytes.NewReader
var _ = context.Background
