package integration

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"
)

// faultProxy is a TCP proxy on loopback in front of one loopback target
// that can stall or cut the traffic through it, for tests. Stall holds
// every byte (connections stay open, nothing is forwarded) until Restore;
// Cut closes every connection and closes new ones at once until Restore.
// It is bounded: at most maxProxyConns connections at a time, and the
// test's end closes it and every connection.
type faultProxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	state  proxyState
	resume chan struct{} // closed when a stall ends
	conns  map[net.Conn]struct{}
	closed chan struct{}
	wg     sync.WaitGroup
}

type proxyState int

const (
	proxyPassing proxyState = iota
	proxyStalled
	proxyCut
)

const maxProxyConns = 64

// newFaultProxy starts a proxy on 127.0.0.1 to target, which must be a
// loopback address.
func newFaultProxy(t *testing.T, target string) *faultProxy {
	t.Helper()
	host, _, err := net.SplitHostPort(target)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		t.Fatalf("fault proxy: target %q is not a loopback host:port", target)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}, closed: make(chan struct{}), resume: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Addr is the proxy's address.
func (p *faultProxy) Addr() string { return p.ln.Addr().String() }

// Dial connects to the proxy whatever address is asked for: a kgo.Dialer
// that sends a client's every connection (seed and discovered brokers)
// through it.
func (p *faultProxy) Dial(ctx context.Context, network, _ string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, p.Addr())
}

// Stall stops forwarding bytes; connections stay open.
func (p *faultProxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state == proxyPassing {
		p.resume = make(chan struct{})
	}
	p.state = proxyStalled
}

// Cut closes every connection and refuses new ones (they are closed as
// soon as accepted).
func (p *faultProxy) Cut() {
	p.mu.Lock()
	if p.state == proxyStalled {
		close(p.resume)
	}
	p.state = proxyCut
	conns := p.conns
	p.conns = map[net.Conn]struct{}{}
	p.mu.Unlock()
	for c := range conns {
		c.Close()
	}
}

// Restore forwards again.
func (p *faultProxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state == proxyStalled {
		close(p.resume)
	}
	p.state = proxyPassing
}

func (p *faultProxy) close() {
	select {
	case <-p.closed:
		return
	default:
	}
	close(p.closed)
	p.ln.Close()
	p.Cut()
	p.wg.Wait()
}

func (p *faultProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.mu.Lock()
		refuse := p.state == proxyCut || len(p.conns) >= 2*maxProxyConns
		p.mu.Unlock()
		if refuse {
			c.Close()
			continue
		}
		up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.state == proxyCut {
			p.mu.Unlock()
			c.Close()
			up.Close()
			continue
		}
		p.conns[c] = struct{}{}
		p.conns[up] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(up, c)
		go p.pipe(c, up)
	}
}

// pipe copies src to dst through the gate, then closes both.
func (p *faultProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	defer func() {
		src.Close()
		dst.Close()
		p.mu.Lock()
		delete(p.conns, src)
		delete(p.conns, dst)
		p.mu.Unlock()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.gate() {
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

// gate waits while the proxy is stalled and reports whether bytes may
// pass (false once cut or closed).
func (p *faultProxy) gate() bool {
	for {
		p.mu.Lock()
		st, resume := p.state, p.resume
		p.mu.Unlock()
		switch st {
		case proxyPassing:
			return true
		case proxyCut:
			return false
		}
		select {
		case <-resume:
		case <-p.closed:
			return false
		}
	}
}
