package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/throttler/throttler/consumer"
)

const (
	// streamsReplyTimeout bounds the wait for the JVM's answer to a
	// command (a stop closes the application: up to 60 s in the JVM).
	streamsReplyTimeout = 90 * time.Second
	// streamsExitTimeout bounds the wait for the JVM to exit at the end
	// of its stdin; past it the JVM is killed.
	streamsExitTimeout = 90 * time.Second
)

// streamsJVM is the Kafka Streams reference's JVM, which runs every round
// (warm after the first) on commands from its stdin (StreamsReference.java).
type streamsJVM struct {
	cmd       *exec.Cmd
	stdin     io.WriteCloser
	lines     chan string   // its stdout, a line at a time; closed at its end
	done      chan struct{} // closed once it has exited
	waitErr   error         // its exit, once done is closed
	stderr    *tailWriter
	stateDir  string
	guarantee string // processing.guarantee
	threads   int    // num.stream.threads
	log       zerolog.Logger
	closeOnce sync.Once
}

// startStreams builds the Kafka Streams reference if needed and starts
// its JVM on brokers. Without Java or Maven it returns no JVM and skip,
// the reason.
func startStreams(ctx context.Context, c Config, brokers []string) (s *streamsJVM, skip string, err error) {
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, "no java on PATH (Java 17 or later runs the Kafka Streams reference)", nil
	}
	dir := c.StreamsCache
	if dir == "" {
		if dir, err = streamsCacheDir(); err != nil {
			return nil, "", err
		}
	}
	c.Log.Info().Str("dir", dir).Msg("the Kafka Streams reference: building it if needed")
	cp, err := streamsClasspath(dir)
	if errors.Is(err, errNoJava) {
		return nil, err.Error(), nil
	}
	if err != nil {
		return nil, "", err
	}
	stateDir, err := os.MkdirTemp("", "throttler-bench-streams-")
	if err != nil {
		return nil, "", err
	}
	s = &streamsJVM{
		lines:     make(chan string, 16),
		done:      make(chan struct{}),
		stderr:    &tailWriter{max: 8 << 10},
		stateDir:  stateDir,
		guarantee: "exactly_once_v2",
		threads:   runtime.NumCPU(),
		log:       c.Log,
	}
	if c.Delivery == consumer.AtLeastOnce {
		s.guarantee = "at_least_once"
	}
	s.cmd = exec.Command(java, "-Djava.io.tmpdir="+stateDir, "-cp", cp, streamsMain,
		strings.Join(brokers, ","), strconv.Itoa(s.threads), s.guarantee, stateDir)
	s.cmd.SysProcAttr = streamsProcAttr()
	s.cmd.Stderr = s.stderr
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		os.RemoveAll(stateDir)
		return nil, "", err
	}
	if s.stdin, err = s.cmd.StdinPipe(); err != nil {
		os.RemoveAll(stateDir)
		return nil, "", err
	}
	if err := s.cmd.Start(); err != nil {
		os.RemoveAll(stateDir)
		return nil, "", fmt.Errorf("starting the Kafka Streams reference's JVM: %w", err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
		s.waitErr = s.cmd.Wait()
		close(s.done)
	}()
	return s, "", nil
}

// close ends the JVM: the end of its stdin closes what runs and exits;
// past streamsExitTimeout it is killed. It always leaves the JVM gone.
func (s *streamsJVM) close() {
	s.closeOnce.Do(func() {
		go func() { // what it says no longer matters; the reader must not block
			for range s.lines {
			}
		}()
		s.stdin.Close()
		t := time.NewTimer(streamsExitTimeout)
		defer t.Stop()
		select {
		case <-s.done:
		case <-t.C:
			s.log.Warn().Msg("the Kafka Streams reference did not exit; killing it")
			_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			_ = s.cmd.Process.Kill()
			<-s.done
		}
		os.RemoveAll(s.stateDir)
	})
}

// failure describes the JVM's end or error line, with its stderr's tail.
func (s *streamsJVM) failure(what string) error {
	return fmt.Errorf("kafka streams reference: %s\n%s", what, s.stderr.String())
}

// next returns the JVM's next stdout line, or an error when it has
// exited, ctx ends or the wait exceeds timeout (0: no limit).
func (s *streamsJVM) next(ctx context.Context, timeout time.Duration) (string, error) {
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	select {
	case l, ok := <-s.lines:
		if !ok {
			<-s.done
			return "", s.failure(fmt.Sprintf("the JVM exited (%v)", s.waitErr))
		}
		return l, nil
	case <-ctx.Done():
		return "", ctx.Err()
	case <-expired:
		return "", s.failure("no answer within " + timeout.String())
	}
}

// command sends line and waits for the answer that starts with want.
func (s *streamsJVM) command(ctx context.Context, line, want string) error {
	if _, err := io.WriteString(s.stdin, line+"\n"); err != nil {
		return s.failure(fmt.Sprintf("writing %q: %v", line, err))
	}
	l, err := s.next(ctx, streamsReplyTimeout)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(l, want) {
		return s.failure(fmt.Sprintf("%q answered %q", line, l))
	}
	return nil
}

// run runs one application, app, from input to passed and rejected until
// ctx ends or the JVM reports an error, then stops it.
func (s *streamsJVM) run(ctx context.Context, app, input, passed, rejected string) error {
	if err := s.command(ctx, strings.Join([]string{"start", app, input, passed, rejected}, " "), "started"); err != nil {
		return err
	}
	l, err := s.next(ctx, 0)
	if err == nil {
		err = s.failure(fmt.Sprintf("application %s: %s", app, l))
	}
	// Stopped on ctx, or failed: stop it either way (a failed
	// application is shut down already; stop answers at once).
	stopCtx, cancel := context.WithTimeout(context.Background(), streamsReplyTimeout)
	defer cancel()
	if serr := s.command(stopCtx, "stop", "stopped"); serr != nil && errors.Is(err, context.Canceled) {
		return serr
	}
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// cpu returns the JVM's CPU time so far (user and system, from
// /proc/PID/stat), or 0 where there is no /proc.
func (s *streamsJVM) cpu() time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(s.cmd.Process.Pid) + "/stat")
	if err != nil {
		return 0
	}
	d, _ := parseStatCPU(b)
	return d
}

// clockTicks is the unit of /proc/PID/stat's times (USER_HZ), 100 on
// Linux.
const clockTicks = 100

// parseStatCPU returns utime + stime of a /proc/PID/stat line.
func parseStatCPU(b []byte) (time.Duration, error) {
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may hold spaces and parentheses
	if i < 0 {
		return 0, errors.New("no ')' in /proc stat")
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state): utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc stat has %d fields after the command", len(f))
	}
	var ticks uint64
	for _, v := range f[11:13] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc stat time %q: %w", v, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// streamsRound runs round i of the Kafka Streams reference (-1-k: its
// warm-up pass k).
func (r *runner) streamsRound(ctx context.Context, i int) (Round, error) {
	what := "ks"
	if i < 0 {
		what, i = "ks-warm", -1-i
	}
	app := r.name(what, i)
	passed, rejected := r.name(what+"-pass", i), r.name(what+"-rej", i)
	if err := r.createTopics(ctx, passed, rejected); err != nil {
		return Round{}, err
	}
	defer r.cleanup(app, passed, rejected)
	return r.runSide(ctx, sideStreams, app, r.input(), r.streams.cpu, func(ctx context.Context) error {
		return r.streams.run(ctx, app, r.input(), passed, rejected)
	})
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b = append(w.b, p...)
	if len(w.b) > w.max {
		w.b = append(w.b[:0], w.b[len(w.b)-w.max:]...)
	}
	return len(p), nil
}

func (w *tailWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.b)
}
