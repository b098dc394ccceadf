package integration

import (
	"io"
	"net"
	"testing"
	"time"

	. "github.com/throttler/throttler/integration/suite"
)

// The proxy passes bytes, holds them while stalled, delivers them on
// Restore, and closes connections when cut.
func TestFaultProxy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // echo server
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	p := NewFaultProxy(t, ln.Addr().String())
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	echo := func(msg string, wait time.Duration) (string, error) {
		if _, err := c.Write([]byte(msg)); err != nil {
			return "", err
		}
		_ = c.SetReadDeadline(time.Now().Add(wait))
		buf := make([]byte, len(msg))
		n, err := io.ReadFull(c, buf)
		return string(buf[:n]), err
	}
	if got, err := echo("one", 10*time.Second); got != "one" || err != nil {
		t.Fatalf("passing: %q, %v", got, err)
	}
	p.Stall()
	if got, err := echo("two", 300*time.Millisecond); got != "" || err == nil {
		t.Fatalf("stalled: echoed %q, %v", got, err)
	}
	p.Restore()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 3)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "two" {
		t.Fatalf("after restore: %q, %v", buf, err)
	}
	p.Cut()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(buf); err == nil {
		t.Fatal("cut: the connection still reads")
	}
	c2, err := net.Dial("tcp", p.Addr())
	if err == nil {
		_ = c2.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := c2.Read(buf); err == nil {
			t.Fatal("cut: a new connection was served")
		}
		c2.Close()
	}
	p.Restore()
	c3, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	c = c3
	if got, err := echo("three", 10*time.Second); got != "three" || err != nil {
		t.Fatalf("restored: %q, %v", got, err)
	}
}
