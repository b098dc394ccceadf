package scale

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// clockTicks is the unit of utime and stime in /proc/PID/stat: USER_HZ,
// 100 on Linux whatever the kernel's HZ.
const clockTicks = 100

// proc is a child process of the harness (the broker, a worker), its
// stdout and stderr in files of the row's directory.
type proc struct {
	name     string
	cmd      *exec.Cmd
	started  time.Time
	out, err string // paths of stdout and stderr
	done     chan struct{}
	exitErr  atomic.Pointer[error]
	peakRSS  atomic.Int64 // the largest VmRSS seen by sample, bytes
	hwm      atomic.Int64 // VmHWM last read, bytes
}

// startProc starts bin with args in dir, its output to dir/name.out and
// dir/name.err.
func startProc(dir, name, bin string, args ...string) (*proc, error) {
	p := &proc{name: name, out: filepath.Join(dir, name+".out"), err: filepath.Join(dir, name+".err"), done: make(chan struct{})}
	stdout, err := os.Create(p.out)
	if err != nil {
		return nil, err
	}
	stderr, err := os.Create(p.err)
	if err != nil {
		stdout.Close()
		return nil, err
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Dir, p.cmd.Stdout, p.cmd.Stderr = dir, stdout, stderr
	if err := p.cmd.Start(); err != nil {
		stdout.Close()
		stderr.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p.started = time.Now()
	go func() {
		err := p.cmd.Wait()
		stdout.Close()
		stderr.Close()
		p.exitErr.Store(&err)
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended, and how.
func (p *proc) exited() (bool, error) {
	select {
	case <-p.done:
		return true, *p.exitErr.Load()
	default:
		return false, nil
	}
}

// stop sends SIGTERM, waits up to grace, then SIGKILLs. It returns how the
// process ended ("" for a clean exit).
func (p *proc) stop(grace time.Duration) string {
	if done, err := p.exited(); done {
		return exitText(err)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return exitText(*p.exitErr.Load())
	case <-time.After(grace):
	}
	p.cmd.Process.Kill()
	<-p.done
	return fmt.Sprintf("killed after %v without exiting on SIGTERM", grace)
}

// kill SIGKILLs the process and waits for it.
func (p *proc) kill() {
	if done, _ := p.exited(); !done {
		p.cmd.Process.Kill()
		<-p.done
	}
}

func exitText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// cpuSeconds returns the process's user and system CPU time so far, from
// /proc/PID/stat; 0 once it has ended.
func (p *proc) cpuSeconds() float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// Fields after the command name, which is in parentheses and may
	// hold spaces: state is field 3, utime 14 and stime 15.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / clockTicks
}

// sampleMemory reads VmRSS and VmHWM from /proc/PID/status, keeps the
// largest RSS seen and the latest high-water mark, and returns the RSS.
func (p *proc) sampleMemory() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	var rss int64
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || k != "VmRSS" && k != "VmHWM" {
			continue
		}
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if k == "VmRSS" {
			rss = kb << 10
		} else {
			p.hwm.Store(kb << 10)
		}
	}
	if rss > p.peakRSS.Load() {
		p.peakRSS.Store(rss)
	}
	return rss
}

// peak returns the process's peak RSS: its VmHWM, or the largest RSS
// sampled when that is larger (a process that ended).
func (p *proc) peak() int64 { return max(p.hwm.Load(), p.peakRSS.Load()) }

// waitLine waits until a line of the file at path contains sub and
// returns it; it gives up after timeout, or when the process ends.
func (p *proc) waitLine(ctx context.Context, path, sub string, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	for {
		if line, ok := findLine(path, sub); ok {
			return line, nil
		}
		if done, err := p.exited(); done {
			return "", fmt.Errorf("%s ended (%v) before writing %q; see %s", p.name, err, sub, path)
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("%s wrote no %q within %v; see %s", p.name, sub, timeout, path)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func findLine(path, sub string) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), sub) {
			return sc.Text(), true
		}
	}
	return "", false
}

// errNothing says a row's workers delivered nothing.
var errNothing = errors.New("nothing delivered")
