// Package broker runs kfake, the Kafka-protocol broker of franz-go, inside
// the process: the zero-setup Kafka of `throttler broker`, `throttler demo`,
// the benchmarks and the tests.
package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// seedTimeout bounds the creation of the seed topics in Start.
const seedTimeout = 30 * time.Second

// ErrOptions is wrapped by the error Start returns for invalid options.
var ErrOptions = errors.New("invalid broker options")

// Broker is a running single-node kfake cluster. Its methods are safe for
// concurrent use.
type Broker struct {
	cluster    *kfake.Cluster
	addrs      []string
	clientOpts []kgo.Opt
	own        *kgo.Client // the compactor's
	compactor  *compactor
	compacting chan struct{} // closed once the compactor stopped

	closeOnce sync.Once
	done      chan struct{}
	stop      context.CancelFunc
}

// Start starts a broker and returns once it answers requests and the seed
// topics exist. The broker stops when ctx is done or Close is called,
// whichever comes first; Done tells when it has stopped.
func Start(ctx context.Context, opts ...Opt) (*Broker, error) {
	c := defaultCfg()
	for _, o := range opts {
		o.apply(&c)
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	if _, err := c.security(""); err != nil {
		return nil, err // before listening: bad options start nothing
	}
	if c.dataDir != "" {
		// The records are the deployment's events: readable by this
		// user only (kfake makes its files 0644 within; the directory's
		// mode keeps others out, and `throttler broker` sets a umask
		// that makes them 0600 too).
		if err := os.MkdirAll(c.dataDir, 0o700); err != nil {
			return nil, fmt.Errorf("broker: data dir: %w", err)
		}
		if err := os.Chmod(c.dataDir, 0o700); err != nil {
			return nil, fmt.Errorf("broker: data dir: %w", err)
		}
		// Before anyone connects: see recoverDataDir.
		if err := recoverDataDir(ctx, &c); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		return nil, fmt.Errorf("broker: listen on %s: %w", c.addr, err)
	}
	advertised, err := advertise(ln.Addr().(*net.TCPAddr), c.advertise)
	if err != nil {
		ln.Close()
		return nil, err
	}
	var used bool
	listen := func(string, string) (net.Listener, error) {
		// kfake asks for 127.0.0.1 and a port; we hand it the listener
		// already bound to the requested address instead.
		if used {
			return nil, errors.New("broker: kfake asked for a second listener")
		}
		used = true
		return &advertisedListener{Listener: ln, addr: advertised}, nil
	}
	kopts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.ListenFn(listen),
		kfake.DefaultNumPartitions(int(c.partitions)),
		kfake.BrokerConfigs(map[string]string{
			// The broker compacts itself (compaction.go).
			"log.cleaner.backoff.ms": strconv.FormatInt(cleanerOff, 10),
		}),
		kfake.WithLogger(kfakeLogger{c.log}),
	}
	if c.dataDir != "" {
		kopts = append(kopts, kfake.DataDir(c.dataDir))
	}
	sec, err := c.security(advertised.String())
	if err != nil {
		ln.Close()
		return nil, err
	}
	kopts = append(kopts, sec.kfake...)
	cluster, err := kfake.NewCluster(kopts...)
	if err != nil {
		ln.Close() // kfake closes it only once the listener was handed over
		return nil, fmt.Errorf("broker: start kfake: %w", err)
	}
	guardFetches(cluster)
	b := &Broker{cluster: cluster, addrs: []string{advertised.String()}, done: make(chan struct{}), compacting: make(chan struct{})}
	b.clientOpts = append([]kgo.Opt{kgo.SeedBrokers(b.addrs...)}, sec.client...)
	own, err := kgo.NewClient(b.clientOpts...)
	if err != nil {
		cluster.Close()
		return nil, fmt.Errorf("broker: own client: %w", err)
	}
	b.own = own
	runCtx, stop := context.WithCancel(ctx)
	b.stop = stop
	b.compactor = newCompactor(cluster, kadm.NewClient(own), c.log, runCtx.Done())
	go func() {
		defer close(b.compacting)
		b.compactor.run(runCtx, c.compaction)
	}()
	go func() {
		<-runCtx.Done()
		b.shutdown()
	}()
	seedCtx, cancel := context.WithTimeout(ctx, seedTimeout)
	defer cancel()
	if err := EnsureTopicsOpts(seedCtx, b.clientOpts, c.partitions, nil, c.seed...); err != nil {
		b.Close()
		return nil, fmt.Errorf("broker: seed topics: %w", err)
	}
	c.log.Info().Str("addr", b.Addr()).Str("data_dir", c.dataDir).Msg("broker started")
	return b, nil
}

func (c *cfg) validate() error {
	if _, _, err := net.SplitHostPort(c.addr); err != nil {
		return fmt.Errorf("%w: address %q: want host:port", ErrOptions, c.addr)
	}
	if c.partitions < 1 {
		return fmt.Errorf("%w: partitions must be at least 1, got %d", ErrOptions, c.partitions)
	}
	if c.compaction != 0 && c.compaction < time.Millisecond {
		return fmt.Errorf("%w: compaction interval must be 0 (never) or at least 1ms, got %v", ErrOptions, c.compaction)
	}
	return nil
}

// advertise returns the address to give clients for a listener on l.
func advertise(l *net.TCPAddr, adv string) (net.Addr, error) {
	host, port := l.IP.String(), strconv.Itoa(l.Port)
	if l.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	if adv != "" {
		h, p, err := net.SplitHostPort(adv)
		if err != nil { // just a host
			h, p = adv, ""
		}
		if h == "" {
			return nil, fmt.Errorf("%w: advertised address %q has no host", ErrOptions, adv)
		}
		host = h
		if p != "" {
			if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
				return nil, fmt.Errorf("%w: advertised address %q: bad port", ErrOptions, adv)
			}
			port = p
		}
	}
	return hostPort(net.JoinHostPort(host, port)), nil
}

// hostPort is a TCP address that may name its host.
type hostPort string

func (a hostPort) Network() string { return "tcp" }
func (a hostPort) String() string  { return string(a) }

// advertisedListener reports the advertised address, which kfake puts in
// its metadata, instead of the bound one.
type advertisedListener struct {
	net.Listener
	addr net.Addr
}

func (l *advertisedListener) Addr() net.Addr { return l.addr }

// Addr returns the address clients should use (host:port), with the real
// port when the broker was asked to listen on port 0.
func (b *Broker) Addr() string { return b.addrs[0] }

// Addrs returns the seed addresses of the cluster, for kgo.SeedBrokers.
func (b *Broker) Addrs() []string { return append([]string(nil), b.addrs...) }

// Compact compacts the compacted topics and applies retention now, once
// no compacted topic holds an open transaction; it waits for that until
// ctx ends.
func (b *Broker) Compact(ctx context.Context) error { return b.compactor.compact(ctx) }

// Done is closed once the broker has stopped.
func (b *Broker) Done() <-chan struct{} { return b.done }

// Close stops the broker, saving its state to the data dir when it has
// one, and waits until it has stopped. It is safe to call more than once.
func (b *Broker) Close() error {
	b.stop()
	<-b.done
	return nil
}

func (b *Broker) shutdown() {
	b.closeOnce.Do(func() {
		<-b.compacting
		b.compactor.stop()
		b.cluster.Close()
		b.own.Close()
		close(b.done)
	})
}

// kfakeLogger forwards kfake's logs to zerolog.
type kfakeLogger struct{ log zerolog.Logger }

func (l kfakeLogger) Logf(level kfake.LogLevel, format string, args ...any) {
	var lvl zerolog.Level
	switch level {
	case kfake.LogLevelError:
		lvl = zerolog.ErrorLevel
	case kfake.LogLevelWarn:
		lvl = zerolog.WarnLevel
		if strings.HasPrefix(format, "txn: EndTxn slow") {
			// kfake's own timing (an EndTxn over 5 ms), which a busy
			// machine trips: nothing a user of the broker can act on.
			lvl = zerolog.DebugLevel
		}
	case kfake.LogLevelInfo:
		lvl = zerolog.DebugLevel
	case kfake.LogLevelDebug:
		lvl = zerolog.TraceLevel
	default:
		return
	}
	l.log.WithLevel(lvl).Str("component", "kfake").Msgf(format, args...)
}
