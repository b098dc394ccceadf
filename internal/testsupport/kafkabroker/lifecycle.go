package kafkabroker

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"
)

// Stopping, killing and restarting a cluster's nodes.

// stopTimeout bounds a graceful stop; past it the JVM is killed.
const stopTimeout = time.Minute

// quorumGrace is how long Stop lets a node run on once the nodes that
// exited leave the controller quorum without a majority: its broker's
// controlled shutdown, which waits for a controller, cannot complete.
const quorumGrace = 5 * time.Second

// Stop stops every node gracefully (SIGTERM: a controlled shutdown that
// flushes and closes its logs) and waits for the JVMs to exit; a JVM
// still running a minute after its SIGTERM is killed and Stop returns an
// error. The nodes get their signals together: a node's broker shuts down
// through the controller quorum, which the nodes stopped before it would
// have left without a majority. A node still running once the nodes that
// exited took the majority with them cannot finish that way: it is killed
// quorumGrace later, without an error (its logs are recovered at its next
// start, as after a crash). Stopping a stopped node does nothing.
func (b *Broker) Stop() error {
	errs := make([]error, len(b.nodes))
	gone := make(chan struct{}) // closed once too few nodes run for a quorum
	var mu sync.Mutex
	left, majority := len(b.nodes), len(b.nodes)/2+1
	var wg sync.WaitGroup
	for i, n := range b.nodes {
		wg.Go(func() {
			errs[i] = n.stop(gone)
			mu.Lock()
			if left--; left == majority-1 {
				close(gone)
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// StopNode stops node i (0-based) as Stop does, the other nodes running.
func (b *Broker) StopNode(i int) error { return b.nodes[i].stop(nil) }

// stop stops the node gracefully; once quorumGone is closed (nil: never),
// it waits quorumGrace more, then kills it.
func (n *node) stop(quorumGone <-chan struct{}) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	p := n.proc
	if p == nil || p.exited() {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	timeout := time.After(stopTimeout)
	select {
	case <-p.done:
		return nil
	case <-quorumGone:
		select {
		case <-p.done:
		case <-time.After(quorumGrace):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		return nil
	case <-timeout:
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("kafkabroker: node %d did not stop within %v of SIGTERM; killed", n.id, stopTimeout)
	}
}

// Kill SIGKILLs every node's JVM, as a crash would end it, and waits
// until they are gone. Killing a stopped node does nothing.
func (b *Broker) Kill() {
	for _, n := range b.nodes {
		n.kill()
	}
}

// KillNode SIGKILLs node i (0-based) as Kill does.
func (b *Broker) KillNode(i int) { b.nodes[i].kill() }

func (n *node) kill() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if p := n.proc; p != nil && !p.exited() {
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// Restart starts the stopped or killed nodes again on the same ports and
// data, and waits until they answer. Running nodes are stopped first.
func (b *Broker) Restart() error {
	if err := b.Stop(); err != nil {
		return err
	}
	return b.startNodes(b.nodes)
}

// RestartNode restarts node i (0-based) as Restart does.
func (b *Broker) RestartNode(i int) error {
	if err := b.nodes[i].stop(nil); err != nil {
		return err
	}
	return b.startNodes(b.nodes[i : i+1])
}

// Close stops the cluster (gracefully, then by force) and leaves its
// directory to its owner.
func (b *Broker) Close() error { return b.Stop() }
