package kafkabroker

import (
	"os/exec"
	"runtime"
)

// process is a child process and the end of its wait.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited
	err  error         // what Wait returned, once done is closed
}

// spawn starts cmd so that it dies with this process (see
// setDeathSignal). The child is started from a goroutine locked to its OS
// thread, which then waits for it: Linux sends the death signal when the
// thread that forked the child ends, and the Go runtime ends threads at
// will unless a goroutine holds one. The goroutine never unlocks, so the
// thread ends with it, after the child.
func spawn(cmd *exec.Cmd) (*process, error) {
	p := &process{cmd: cmd, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		setDeathSignal(cmd)
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.err = cmd.Wait()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

// exited reports whether the process has exited.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}
