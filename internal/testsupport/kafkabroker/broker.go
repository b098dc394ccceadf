package kafkabroker

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

//go:embed log4j2.properties
var log4jConfig []byte

// Broker is an Apache Kafka cluster on loopback: one KRaft node by
// default, or Nodes(n) nodes, each broker and controller in one JVM. Its
// methods are safe for concurrent use; those without a node index act on
// every node.
type Broker struct {
	cfg       cfg
	lib, java string
	dir       string
	nodes     []*node
}

// node is one JVM of the cluster.
type node struct {
	id    int    // node.id, 1-based
	dir   string // server.properties, log4j2.properties, logs, data/
	port  int    // PLAINTEXT listener
	cport int    // CONTROLLER listener

	mu   sync.Mutex
	proc *process // nil before the first start
}

// New starts a cluster in dir, an empty directory it owns until Close
// (its data, configuration and logs), and waits until every node answers.
// It returns an error wrapping ErrUnavailable when Java or the jars are
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
	for i := range c.nodes {
		n := &node{id: i + 1, dir: dir}
		if c.nodes > 1 {
			n.dir = filepath.Join(dir, fmt.Sprintf("node-%d", i+1))
			if err := os.MkdirAll(n.dir, 0o755); err != nil {
				return nil, err
			}
		}
		if err := os.WriteFile(filepath.Join(n.dir, "log4j2.properties"), log4jConfig, 0o644); err != nil {
			return nil, err
		}
		b.nodes = append(b.nodes, n)
	}
	// Free ports are taken from the kernel and released before the JVMs
	// bind them: another process may take one in between, so a start
	// that fails to bind is tried again on new ports, formatted anew (the
	// data directories record the controllers' addresses).
	for attempt := 1; ; attempt++ {
		if err := b.pickPorts(); err != nil {
			return nil, err
		}
		clusterID := newClusterID()
		for _, n := range b.nodes {
			if err := b.writeProperties(n); err != nil {
				return nil, err
			}
			if err := os.RemoveAll(filepath.Join(n.dir, "data")); err != nil {
				return nil, err
			}
			if err := b.format(n, clusterID); err != nil {
				return nil, err
			}
		}
		err := b.startNodes(b.nodes)
		if err == nil {
			return b, nil
		}
		b.Kill()
		if attempt == 3 || !b.logHas("Address already in use") {
			return nil, err
		}
	}
}

// Addr is where clients find the cluster, the same across restarts: the
// node's host:port, or every node's, comma-separated.
func (b *Broker) Addr() string {
	addrs := make([]string, len(b.nodes))
	for i, n := range b.nodes {
		addrs[i] = n.addr()
	}
	return strings.Join(addrs, ",")
}

// Seeds splits a cluster's address (Addr: host:port, or several,
// comma-separated) into seed brokers.
func Seeds(addr string) []string { return strings.Split(addr, ",") }

// Nodes is the number of nodes.
func (b *Broker) Nodes() int { return len(b.nodes) }

func (n *node) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(n.port)) }

// Dir is the cluster's directory; a one-node cluster's log is
// Dir()/server.log, node i's of a larger one Dir()/node-i/server.log.
func (b *Broker) Dir() string { return b.dir }

// PID is the first node's JVM's process id while it runs, else 0.
func (b *Broker) PID() int { return b.nodes[0].pid() }

// Running reports whether any node's JVM is running.
func (b *Broker) Running() bool {
	return slices.ContainsFunc(b.nodes, func(n *node) bool { return n.pid() != 0 })
}

func (n *node) pid() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc == nil || n.proc.exited() {
		return 0
	}
	return n.proc.cmd.Process.Pid
}

func (b *Broker) pickPorts() error {
	ports := make([]int, 2*len(b.nodes))
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("kafkabroker: a free port: %w", err)
		}
		defer ln.Close()
		ports[i] = ln.Addr().(*net.TCPAddr).Port
	}
	for i, n := range b.nodes {
		n.port, n.cport = ports[2*i], ports[2*i+1]
	}
	return nil
}

// writeProperties writes node n's server.properties: the package's and
// the options' properties, and the node's own. One node bootstraps its
// quorum alone (format --standalone); the nodes of a larger cluster are
// all voters, named in controller.quorum.voters.
func (b *Broker) writeProperties(n *node) error {
	own := map[string]string{
		"process.roles":                  "broker,controller",
		"node.id":                        strconv.Itoa(n.id),
		"listeners":                      fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", n.port, n.cport),
		"advertised.listeners":           fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", n.port, n.cport),
		"controller.listener.names":      "CONTROLLER",
		"inter.broker.listener.name":     "PLAINTEXT",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"log.dirs":                       filepath.Join(n.dir, "data"),
	}
	if len(b.nodes) == 1 {
		own["controller.quorum.bootstrap.servers"] = fmt.Sprintf("127.0.0.1:%d", n.cport)
	} else {
		var voters []string
		for _, m := range b.nodes {
			voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", m.id, m.cport))
		}
		own["controller.quorum.voters"] = strings.Join(voters, ",")
	}
	var lines []string
	for _, m := range []map[string]string{b.cfg.props, b.cfg.replication(), own} {
		for k, v := range m {
			lines = append(lines, k+"="+v)
		}
	}
	slices.Sort(lines)
	return os.WriteFile(n.propsFile(), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}

func (n *node) propsFile() string { return filepath.Join(n.dir, "server.properties") }

// format formats node n's data directory for the cluster clusterID.
func (b *Broker) format(n *node, clusterID string) error {
	args := []string{"format", "-t", clusterID, "-c", n.propsFile()}
	if len(b.nodes) == 1 {
		args = append(args, "--standalone")
	}
	if b.cfg.txnVersion != 0 {
		args = append(args, "--feature", "transaction.version="+strconv.Itoa(b.cfg.txnVersion))
	}
	cmd := b.command(n, "kafka.tools.StorageTool", args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("kafkabroker: formatting node %d's data directory: %v\n%s", n.id, err, out)
	}
	return nil
}

// command is a JVM of node n running main with the broker's classpath
// and flags.
func (b *Broker) command(n *node, main string, args ...string) *exec.Cmd {
	jvm := []string{
		"-Xmx" + jvmHeap, "-Xms64m", "-XX:+UseSerialGC", "-XX:+ExitOnOutOfMemoryError", "-XX:-UsePerfData",
		"-Djava.awt.headless=true", "-Djava.net.preferIPv4Stack=true",
		"-Dlog4j2.configurationFile=" + filepath.Join(n.dir, "log4j2.properties"),
		"-Dkafka.logs.dir=" + n.dir,
		// snappy-java and others unpack native libraries into the temp
		// dir; the node's own dir is removed with it.
		"-Djava.io.tmpdir=" + n.dir,
		"-cp", filepath.Join(b.lib, "*"),
		main,
	}
	cmd := exec.Command(b.java, append(jvm, args...)...)
	cmd.Dir = n.dir
	return cmd
}

// startNodes starts the JVMs of nodes and waits until each answers (a
// controller quorum needs a majority of its voters before any node
// serves, so they start together); a node that does not is killed.
func (b *Broker) startNodes(nodes []*node) error {
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		p, err := b.spawn(n)
		if err != nil {
			errs[i] = err
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := b.waitReady(n, p); err != nil {
				n.kill()
				errs[i] = fmt.Errorf("%w\n%s", err, n.logTail(20))
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// spawn starts node n's JVM.
func (b *Broker) spawn(n *node) (*process, error) {
	out, err := os.OpenFile(filepath.Join(n.dir, "stdout.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer out.Close() // the child has its own descriptor
	cmd := b.command(n, "kafka.Kafka", n.propsFile())
	cmd.Stdout, cmd.Stderr = out, out
	n.mu.Lock()
	defer n.mu.Unlock()
	p, err := spawn(cmd)
	if err != nil {
		return nil, fmt.Errorf("kafkabroker: starting node %d's JVM: %w", n.id, err)
	}
	n.proc = p
	return p, nil
}

// waitReady polls node n with metadata requests until it answers with
// itself as a broker (it is then unfenced and serves), the process exits,
// or the start timeout passes.
func (b *Broker) waitReady(n *node, p *process) error {
	deadline := time.Now().Add(startTimeout)
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.addr()), kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
	if err != nil {
		return err
	}
	defer cl.Close()
	var last error
	for time.Now().Before(deadline) {
		if p.exited() {
			return fmt.Errorf("kafkabroker: node %d's JVM exited while starting: %v", n.id, p.err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl.SeedBrokers()[0]) // this node
		cancel()
		if err == nil && slices.ContainsFunc(resp.Brokers, func(br kmsg.MetadataResponseBroker) bool { return int(br.Port) == n.port }) {
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
	return fmt.Errorf("kafkabroker: node %d did not answer within %v (last error: %v)", n.id, startTimeout, last)
}

// logHas reports whether a node's log or output holds s.
func (b *Broker) logHas(s string) bool {
	for _, n := range b.nodes {
		for _, f := range []string{"server.log", "stdout.log"} {
			data, _ := os.ReadFile(filepath.Join(n.dir, f))
			if strings.Contains(string(data), s) {
				return true
			}
		}
	}
	return false
}

// LogTail returns the last n lines of each node's log at WARN or above,
// and of its standard output (where a JVM that fails early writes).
func (b *Broker) LogTail(n int) string {
	var parts []string
	for _, nd := range b.nodes {
		s := nd.logTail(n)
		if s != "" && len(b.nodes) > 1 {
			s = fmt.Sprintf("=== node %d\n%s", nd.id, s)
		}
		if s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "\n")
}

func (nd *node) logTail(n int) string {
	var parts []string
	for _, f := range []string{"server.log", "stdout.log"} {
		data, err := os.ReadFile(filepath.Join(nd.dir, f))
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

// serverLogs returns the paths of the nodes' logs.
func (b *Broker) serverLogs() []string {
	var logs []string
	for _, n := range b.nodes {
		logs = append(logs, filepath.Join(n.dir, "server.log"))
	}
	return logs
}

// newClusterID returns a new cluster id: 16 random bytes in URL-safe
// base64 without padding, as Kafka's Uuid prints (and, as Kafka's, never
// starting with '-', which a command line would take for a flag).
func newClusterID() string {
	for {
		var u [16]byte
		_, _ = rand.Read(u[:])
		if s := base64.RawURLEncoding.EncodeToString(u[:]); s[0] != '-' {
			return s
		}
	}
}
