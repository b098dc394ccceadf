package suite

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"
)

// FaultProxy is a TCP proxy on loopback in front of one loopback target
// that can stall or cut the traffic through it, for tests. Stall holds
// every byte (connections stay open, nothing is forwarded) until Restore;
// Cut closes every connection and closes new ones at once until Restore.
// It is bounded: at most maxProxyConns connections at a time, and the
// test's end closes it and every connection.
type FaultProxy struct {
	Ln     net.Listener
	Target string

	Mu     sync.Mutex
	State  ProxyState
	Resume chan struct{} // closed when a stall ends
	Conns  map[net.Conn]struct{}
	Closed chan struct{}
	Wg     sync.WaitGroup
}

type ProxyState int

const (
	ProxyPassing ProxyState = iota
	ProxyStalled
	ProxyCut
)

const MaxProxyConns = 64

// NewFaultProxy starts a proxy on 127.0.0.1 to target, which must be a
// loopback address.
func NewFaultProxy(t *testing.T, target string) *FaultProxy {
	t.Helper()
	host, _, err := net.SplitHostPort(target)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		t.Fatalf("fault proxy: target %q is not a loopback host:port", target)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &FaultProxy{Ln: ln, Target: target, Conns: map[net.Conn]struct{}{}, Closed: make(chan struct{}), Resume: make(chan struct{})}
	p.Wg.Add(1)
	go p.Accept()
	t.Cleanup(p.Close)
	return p
}

// Addr is the proxy's address.
func (p *FaultProxy) Addr() string { return p.Ln.Addr().String() }

// Dial connects to the proxy whatever address is asked for: a kgo.Dialer
// that sends a client's every connection (seed and discovered brokers)
// through it.
func (p *FaultProxy) Dial(ctx context.Context, network, _ string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, p.Addr())
}

// Stall stops forwarding bytes; connections stay open.
func (p *FaultProxy) Stall() {
	p.Mu.Lock()
	defer p.Mu.Unlock()
	if p.State == ProxyPassing {
		p.Resume = make(chan struct{})
	}
	p.State = ProxyStalled
}

// Cut closes every connection and refuses new ones (they are closed as
// soon as accepted).
func (p *FaultProxy) Cut() {
	p.Mu.Lock()
	if p.State == ProxyStalled {
		close(p.Resume)
	}
	p.State = ProxyCut
	conns := p.Conns
	p.Conns = map[net.Conn]struct{}{}
	p.Mu.Unlock()
	for c := range conns {
		c.Close()
	}
}

// Restore forwards again.
func (p *FaultProxy) Restore() {
	p.Mu.Lock()
	defer p.Mu.Unlock()
	if p.State == ProxyStalled {
		close(p.Resume)
	}
	p.State = ProxyPassing
}

func (p *FaultProxy) Close() {
	select {
	case <-p.Closed:
		return
	default:
	}
	close(p.Closed)
	p.Ln.Close()
	p.Cut()
	p.Wg.Wait()
}

func (p *FaultProxy) Accept() {
	defer p.Wg.Done()
	for {
		c, err := p.Ln.Accept()
		if err != nil {
			return // closed
		}
		p.Mu.Lock()
		refuse := p.State == ProxyCut || len(p.Conns) >= 2*MaxProxyConns
		p.Mu.Unlock()
		if refuse {
			c.Close()
			continue
		}
		up, err := net.DialTimeout("tcp", p.Target, 5*time.Second)
		if err != nil {
			c.Close()
			continue
		}
		p.Mu.Lock()
		if p.State == ProxyCut {
			p.Mu.Unlock()
			c.Close()
			up.Close()
			continue
		}
		p.Conns[c] = struct{}{}
		p.Conns[up] = struct{}{}
		p.Mu.Unlock()
		p.Wg.Add(2)
		go p.Pipe(up, c)
		go p.Pipe(c, up)
	}
}

// Pipe copies src to dst through the gate, then closes both.
func (p *FaultProxy) Pipe(dst, src net.Conn) {
	defer p.Wg.Done()
	defer func() {
		src.Close()
		dst.Close()
		p.Mu.Lock()
		delete(p.Conns, src)
		delete(p.Conns, dst)
		p.Mu.Unlock()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.Gate() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF, or a side was closed
		}
	}
}

// Gate waits while the proxy is stalled and reports whether bytes may
// pass (false once cut or closed).
func (p *FaultProxy) Gate() bool {
	for {
		p.Mu.Lock()
		st, resume := p.State, p.Resume
		p.Mu.Unlock()
		switch st {
		case ProxyPassing:
			return true
		case ProxyCut:
			return false
		}
		select {
		case <-resume:
		case <-p.Closed:
			return false
		}
	}
}
