package broker

import (
	"bufio"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Environment of TestBrokerProcess.
const (
	envProcDir  = "THROTTLER_BROKER_TEST_DIR"
	envProcPort = "THROTTLER_BROKER_TEST_PORT"
)

// TestBrokerProcess is not a test: run by crashable.start in a child
// process, it runs the broker on $THROTTLER_BROKER_TEST_DIR with topic "t"
// (one partition) until SIGTERM (graceful stop) or SIGKILL.
func TestBrokerProcess(t *testing.T) {
	dir := os.Getenv(envProcDir)
	if dir == "" {
		t.Skip("only run as the child process of crashable.start")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	b, err := Start(ctx, Addr("127.0.0.1:"+os.Getenv(envProcPort)), DataDir(dir), Partitions(1), SeedTopics("t"))
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("ADDR " + b.Addr() + "\n")
	<-b.Done()
}

// crashable is a broker in a child process, to be SIGKILLed.
type crashable struct {
	dir, addr string
	cmd       *exec.Cmd
}

// start starts the broker on b.dir, on b.addr's port if it has one.
func (b *crashable) start(t *testing.T) {
	t.Helper()
	port := "0"
	if b.addr != "" {
		_, port, _ = net.SplitHostPort(b.addr)
	}
	b.cmd = exec.Command(os.Args[0], "-test.run=^TestBrokerProcess$")
	b.cmd.Env = append(os.Environ(), envProcDir+"="+b.dir, envProcPort+"="+port)
	b.cmd.Stderr = os.Stderr
	out, err := b.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cmd := b.cmd
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if a, ok := strings.CutPrefix(sc.Text(), "ADDR "); ok {
			b.addr = a
			go func() { _, _ = bufio.NewReader(out).WriteTo(os.Stdout) }()
			return
		}
	}
	t.Fatalf("the broker process exited without an address: %v", b.cmd.Wait())
}

// kill SIGKILLs the broker and waits for it to exit.
func (b *crashable) kill() {
	_ = b.cmd.Process.Signal(syscall.SIGKILL)
	_ = b.cmd.Wait()
}

// stop SIGTERMs the broker and waits for it to exit.
func (b *crashable) stop(t *testing.T) {
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	if err := b.cmd.Wait(); err != nil {
		t.Fatalf("broker after SIGTERM: %v", err)
	}
}

// A broker SIGKILLed while a producer is in a transaction aborts that
// transaction for good when it restarts: the producer is fenced, the
// same transactional id's next transaction is read by read_committed
// readers (kfake alone hides it: internal/testsupport/kfakerepro), and the aborted
// records stay invisible after a second crash (kfake alone revives them).
func TestCrashedTransactionStaysAborted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	b := &crashable{dir: t.TempDir()}
	b.start(t)
	old := txn(t, b)
	if err := old.ProduceSync(ctx, kgo.StringRecord("aborted")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	b.kill()
	b.start(t)
	if err := old.EndTransaction(ctx, kgo.TryCommit); err == nil {
		t.Error("the producer whose transaction the crash aborted committed it after the restart")
	}
	next := txn(t, b)
	if err := next.ProduceSync(ctx, kgo.StringRecord("committed")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := next.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	plain := client(t, &Broker{addrs: []string{b.addr}}, kgo.DefaultProduceTopic("t"))
	if err := plain.ProduceSync(ctx, kgo.StringRecord("end")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	want := []string{"committed", "end"}
	if got := readCommitted(ctx, t, b.addr); !slices.Equal(got, want) {
		t.Errorf("read_committed after a crash: %q, want %q", got, want)
	}
	b.kill()
	b.start(t)
	if got := readCommitted(ctx, t, b.addr); !slices.Equal(got, want) {
		t.Errorf("read_committed after a second crash: %q, want %q", got, want)
	}
}

// A graceful stop saves the open transactions, which kfake resumes: the
// broker's start leaves them alone, and their producers commit them.
func TestGracefulStopResumesTransaction(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	b := &crashable{dir: t.TempDir()}
	b.start(t)
	p := txn(t, b)
	if err := p.ProduceSync(ctx, kgo.StringRecord("kept")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	b.stop(t)
	b.start(t)
	if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit of a transaction open across a graceful restart: %v", err)
	}
	plain := client(t, &Broker{addrs: []string{b.addr}}, kgo.DefaultProduceTopic("t"))
	if err := plain.ProduceSync(ctx, kgo.StringRecord("end")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if got, want := readCommitted(ctx, t, b.addr), []string{"kept", "end"}; !slices.Equal(got, want) {
		t.Errorf("read_committed: %q, want %q", got, want)
	}
}

// txn returns a client of b in a transaction of transactional id "x".
func txn(t *testing.T, b *crashable) *kgo.Client {
	t.Helper()
	cl := client(t, &Broker{addrs: []string{b.addr}}, kgo.TransactionalID("x"),
		kgo.TransactionTimeout(time.Minute), kgo.DefaultProduceTopic("t"))
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	return cl
}

// readCommitted returns the values of topic t's committed records, up to
// the non-transactional record "end", which no aborted range can hide.
func readCommitted(ctx context.Context, t *testing.T, addr string) []string {
	t.Helper()
	cl := client(t, &Broker{addrs: []string{addr}}, kgo.ConsumeTopics("t"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	defer cl.Close()
	var got []string
	for !slices.Contains(got, "end") {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("no record \"end\" read; read %q", got)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

// An idempotent producer whose produce the broker wrote but did not
// answer (the connection cut; the broker SIGKILLed) resends it after the
// restart, with the same sequence numbers: the restarted broker answers
// with the offset of the first write instead of writing it again (kfake
// alone writes it twice: internal/testsupport/kfakerepro).
func TestProduceRetriedAcrossCrashWrittenOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	b := &crashable{dir: t.TempDir()}
	b.start(t)
	d := &cutDialer{}
	p := client(t, &Broker{addrs: []string{b.addr}}, kgo.DefaultProduceTopic("t"), kgo.Dialer(d.dial))
	if err := p.ProduceSync(ctx, kgo.StringRecord("first")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	d.cutNextProduce()
	res := make(chan kgo.ProduceResult, 1)
	p.Produce(ctx, kgo.StringRecord("once"), func(r *kgo.Record, err error) { res <- kgo.ProduceResult{Record: r, Err: err} })
	for end(ctx, t, b.addr) < 2 { // written, unanswered
		time.Sleep(20 * time.Millisecond) // polling a condition
	}
	b.kill()
	b.start(t)
	d.allow()
	r := <-res
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	if got := end(ctx, t, b.addr); r.Record.Offset != 1 || got != 2 {
		t.Errorf("the resent produce got offset %d and the partition ends at %d, want 1 and 2 (written once)", r.Record.Offset, got)
	}
}

// end returns the end offset of t/0.
func end(ctx context.Context, t *testing.T, addr string) int64 {
	t.Helper()
	ends, err := kadm.NewClient(client(t, &Broker{addrs: []string{addr}})).ListEndOffsets(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	o, _ := ends.Lookup("t", 0)
	return o.Offset
}

// cutDialer dials normally until cutNextProduce: the connection that
// writes the next produce request is closed right after it, so that the
// request reaches the broker and its answer does not reach the client,
// and no connection is made again until allow.
type cutDialer struct {
	mu      sync.Mutex
	cutting bool
	cut     bool // cut, and not allowed again yet
}

func (d *cutDialer) cutNextProduce() { d.mu.Lock(); d.cutting = true; d.mu.Unlock() }
func (d *cutDialer) allow()          { d.mu.Lock(); d.cut = false; d.mu.Unlock() }

func (d *cutDialer) dial(ctx context.Context, network, host string) (net.Conn, error) {
	d.mu.Lock()
	cut := d.cut
	d.mu.Unlock()
	if cut {
		return nil, errors.New("cut")
	}
	c, err := (&net.Dialer{}).DialContext(ctx, network, host)
	if err != nil {
		return nil, err
	}
	return &cutConn{Conn: c, d: d}, nil
}

type cutConn struct {
	net.Conn
	d *cutDialer
}

// Write closes the connection after a produce request (API key 0 after
// the 4-byte size) once cutting.
func (c *cutConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	if c.d.cutting && len(p) >= 6 && p[4] == 0 && p[5] == 0 {
		c.d.cutting, c.d.cut = false, true
		c.Conn.Close()
	}
	return n, err
}
