package kfakerepro

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// envDir makes TestBrokerProcess run a kfake broker with that data dir,
// listening on 127.0.0.1 and port envPort.
const (
	envDir  = "KFAKE_REPRO_DATA_DIR"
	envPort = "KFAKE_REPRO_PORT"
)

// skipUnlessRepro skips a reproduction of a bug not yet fixed upstream.
func skipUnlessRepro(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("KFAKE_REPRO") != "1" {
		t.Skip("kfake bug not fixed upstream (KFAKE_REPRO=1 runs it): " + why)
	}
}

// TestBrokerProcess is not a test: run by startBroker in a child process,
// it serves a one-broker kfake cluster persisting in $KFAKE_REPRO_DATA_DIR,
// with topic "t" of one partition, prints its address and runs until
// SIGKILLed, or SIGTERMed: then it closes the cluster, which saves its
// state.
func TestBrokerProcess(t *testing.T) {
	dir := os.Getenv(envDir)
	if dir == "" {
		t.Skip("only run as the child process of startBroker")
	}
	port, _ := strconv.Atoi(os.Getenv(envPort)) // 0: any free port
	c, err := kfake.NewCluster(kfake.Ports(port), kfake.DataDir(dir), kfake.SeedTopics(1, "t"))
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM)
	os.Stdout.WriteString("ADDR " + c.ListenAddrs()[0] + "\n")
	<-stop
	c.Close() // graceful: saves the state
}

// broker is a kfake broker in a child process.
type broker struct {
	cmd  *exec.Cmd
	dir  string
	addr string
}

// startBroker starts a kfake broker persisting in dir in a child process,
// on a free loopback port, and returns once it listens.
func startBroker(t *testing.T, dir string) *broker {
	t.Helper()
	return startBrokerAt(t, dir, "0")
}

// restart starts a broker on b's data dir and port, b having stopped.
func (b *broker) restart(t *testing.T) *broker {
	t.Helper()
	_, port, _ := net.SplitHostPort(b.addr)
	return startBrokerAt(t, b.dir, port)
}

func startBrokerAt(t *testing.T, dir, port string) *broker {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestBrokerProcess$", "-test.v")
	cmd.Env = append(os.Environ(), envDir+"="+dir, envPort+"="+port)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	b := &broker{cmd: cmd, dir: dir}
	t.Cleanup(func() { b.kill(t) })
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "ADDR "); ok {
				addr <- a
			}
		}
	}()
	select {
	case b.addr = <-addr:
	case <-time.After(30 * time.Second):
		t.Fatal("the broker process printed no address")
	}
	return b
}

// kill SIGKILLs the broker and waits for it to exit.
func (b *broker) kill(t *testing.T) { b.signal(t, syscall.SIGKILL) }

func (b *broker) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if b.cmd.ProcessState != nil {
		return
	}
	_ = b.cmd.Process.Signal(sig)
	if err := b.cmd.Wait(); err != nil && sig != syscall.SIGKILL {
		t.Errorf("broker after %v: %v", sig, err)
	}
}
