package kafkabroker

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

//go:embed log4j2.properties
var log4jConfig []byte

// stopTimeout bounds a graceful stop; past it the JVM is killed.
const stopTimeout = time.Minute

// Broker is one Apache Kafka node (KRaft, broker and controller in one
// JVM) on loopback. Its methods are safe for concurrent use.
type Broker struct {
	cfg       cfg
	lib, java string
	dir       string // server.properties, log4j2.properties, logs, data/
	port      int    // PLAINTEXT listener
	cport     int    // CONTROLLER listener

	mu   sync.Mutex
	proc *process // nil before the first start
}

// New starts a broker in dir, an empty directory it owns until Close
// (its data, configuration and logs), and waits until it answers. It
// returns an error wrapping ErrUnavailable when Java or the jars are
// missing.
func New(dir string, opts ...Opt) (*Broker, error) {
	lib, java, err := Lib()
	if err != nil {
		return nil, err
	}
	c := defaultCfg()
	for _, o := range opts {
		o.apply(&c)
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	b := &Broker{cfg: c, lib: lib, java: java, dir: dir}
	if err := os.WriteFile(filepath.Join(dir, "log4j2.properties"), log4jConfig, 0o644); err != nil {
		return nil, err
	}
	// Free ports are taken from the kernel and released before the JVM
	// binds them: another process may take one in between, so a start
	// that fails to bind is tried again on new ports, formatted anew (the
	// data directory records the controller's address).
	for attempt := 1; ; attempt++ {
		if err := b.pickPorts(); err != nil {
			return nil, err
		}
		if err := b.writeProperties(); err != nil {
			return nil, err
		}
		if err := os.RemoveAll(filepath.Join(dir, "data")); err != nil {
			return nil, err
		}
		if err := b.format(); err != nil {
			return nil, err
		}
		err := b.start()
		if err == nil {
			return b, nil
		}
		if attempt == 3 || !b.logHas("Address already in use") {
			return nil, err
		}
	}
}

// Addr is the broker's host:port, the same across restarts.
func (b *Broker) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(b.port)) }

// Dir is the broker's directory; its log is Dir()/server.log.
func (b *Broker) Dir() string { return b.dir }

// PID is the JVM's process id while it runs, else 0.
func (b *Broker) PID() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.proc == nil || b.proc.exited() {
		return 0
	}
	return b.proc.cmd.Process.Pid
}

// Running reports whether the JVM is running.
func (b *Broker) Running() bool { return b.PID() != 0 }

// Stop stops the broker gracefully (SIGTERM: a controlled shutdown that
// flushes and closes its logs) and waits for the JVM to exit; past a
// minute it kills it and returns an error. Stopping a stopped broker does
// nothing.
func (b *Broker) Stop() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.proc
	if p == nil || p.exited() {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(stopTimeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("kafkabroker: the broker did not stop within %v of SIGTERM; killed", stopTimeout)
	}
}

// Kill SIGKILLs the JVM, as a crash would end it, and waits until it is
// gone. Killing a stopped broker does nothing.
func (b *Broker) Kill() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p := b.proc; p != nil && !p.exited() {
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// Restart starts a stopped or killed broker again on the same ports and
// data, and waits until it answers. A running broker is stopped first.
func (b *Broker) Restart() error {
	if err := b.Stop(); err != nil {
		return err
	}
	return b.start()
}

// Close stops the broker (gracefully, then by force) and leaves its
// directory to its owner.
func (b *Broker) Close() error { return b.Stop() }

func (b *Broker) pickPorts() error {
	var ports [2]int
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("kafkabroker: a free port: %w", err)
		}
		defer ln.Close()
		ports[i] = ln.Addr().(*net.TCPAddr).Port
	}
	b.port, b.cport = ports[0], ports[1]
	return nil
}

// writeProperties writes server.properties: the package's and the
// options' properties, and the node's own.
func (b *Broker) writeProperties() error {
	own := map[string]string{
		"process.roles":                       "broker,controller",
		"node.id":                             "1",
		"controller.quorum.bootstrap.servers": fmt.Sprintf("127.0.0.1:%d", b.cport),
		"listeners":                           fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", b.port, b.cport),
		"advertised.listeners":                fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", b.port, b.cport),
		"controller.listener.names":           "CONTROLLER",
		"inter.broker.listener.name":          "PLAINTEXT",
		"listener.security.protocol.map":      "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"log.dirs":                            filepath.Join(b.dir, "data"),
	}
	var lines []string
	for _, m := range []map[string]string{b.cfg.props, own} {
		for k, v := range m {
			lines = append(lines, k+"="+v)
		}
	}
	slices.Sort(lines)
	return os.WriteFile(b.propsFile(), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}

func (b *Broker) propsFile() string { return filepath.Join(b.dir, "server.properties") }

// format formats the data directory for a new one-node cluster.
func (b *Broker) format() error {
	args := []string{"format", "-t", clusterID(), "-c", b.propsFile(), "--standalone"}
	if b.cfg.txnVersion != 0 {
		args = append(args, "--feature", "transaction.version="+strconv.Itoa(b.cfg.txnVersion))
	}
	cmd := b.command("kafka.tools.StorageTool", args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("kafkabroker: formatting the data directory: %v\n%s", err, out)
	}
	return nil
}

// command is a JVM running main with the broker's classpath and flags.
func (b *Broker) command(main string, args ...string) *exec.Cmd {
	jvm := []string{
		"-Xmx" + b.cfg.heap, "-Xms64m", "-XX:+UseSerialGC", "-XX:+ExitOnOutOfMemoryError", "-XX:-UsePerfData",
		"-Djava.awt.headless=true", "-Djava.net.preferIPv4Stack=true",
		"-Dlog4j2.configurationFile=" + filepath.Join(b.dir, "log4j2.properties"),
		"-Dkafka.logs.dir=" + b.dir,
		"-cp", filepath.Join(b.lib, "*"),
		main,
	}
	cmd := exec.Command(b.java, append(jvm, args...)...)
	cmd.Dir = b.dir
	return cmd
}

// start starts the JVM and waits until the broker answers.
func (b *Broker) start() error {
	out, err := os.OpenFile(filepath.Join(b.dir, "stdout.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer out.Close() // the child has its own descriptor
	cmd := b.command("kafka.Kafka", b.propsFile())
	cmd.Stdout, cmd.Stderr = out, out
	b.mu.Lock()
	p, err := spawn(cmd)
	if err == nil {
		b.proc = p
	}
	b.mu.Unlock()
	if err != nil {
		return fmt.Errorf("kafkabroker: starting the JVM: %w", err)
	}
	if err := b.waitReady(p); err != nil {
		b.Kill()
		return fmt.Errorf("%w\n%s", err, b.LogTail(20))
	}
	return nil
}

// waitReady polls the broker with metadata requests until it answers
// with itself as a broker (it is then unfenced and serves), the process
// exits, or the start timeout passes.
func (b *Broker) waitReady(p *process) error {
	deadline := time.Now().Add(b.cfg.startTimeout)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
	if err != nil {
		return err
	}
	defer cl.Close()
	var last error
	for time.Now().Before(deadline) {
		if p.exited() {
			return fmt.Errorf("kafkabroker: the JVM exited while starting: %v", p.err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		cancel()
		if err == nil && slices.ContainsFunc(resp.Brokers, func(br kmsg.MetadataResponseBroker) bool { return int(br.Port) == b.port }) {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-p.done:
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("kafkabroker: the broker did not answer within %v (last error: %v)", b.cfg.startTimeout, last)
}

// logHas reports whether the broker's log or output holds s.
func (b *Broker) logHas(s string) bool {
	for _, f := range []string{"server.log", "stdout.log"} {
		data, _ := os.ReadFile(filepath.Join(b.dir, f))
		if strings.Contains(string(data), s) {
			return true
		}
	}
	return false
}

// LogTail returns the last n lines of the broker's log at WARN or above,
// and of its standard output (where a JVM that fails early writes).
func (b *Broker) LogTail(n int) string {
	var parts []string
	for _, f := range []string{"server.log", "stdout.log"} {
		data, err := os.ReadFile(filepath.Join(b.dir, f))
		if err != nil {
			continue
		}
		var keep []string
		for _, l := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
			if f != "server.log" || strings.Contains(l, "] WARN ") || strings.Contains(l, "] ERROR ") || strings.Contains(l, "] FATAL ") {
				keep = append(keep, l)
			}
		}
		if len(keep) > n {
			keep = keep[len(keep)-n:]
		}
		if len(keep) > 0 {
			parts = append(parts, "--- "+f+":\n"+strings.Join(keep, "\n"))
		}
	}
	return strings.Join(parts, "\n")
}

// clusterID returns a new cluster id: 16 random bytes in URL-safe base64
// without padding, as Kafka's Uuid prints (and, as Kafka's, never starting
// with '-', which a command line would take for a flag).
func clusterID() string {
	for {
		var u [16]byte
		_, _ = rand.Read(u[:])
		if s := base64.RawURLEncoding.EncodeToString(u[:]); s[0] != '-' {
			return s
		}
	}
}
