package kafkabroker

import (
	"os/exec"

	"github.com/throttler/throttler/internal/testsupport/deathsig"
)

// process is a child process and the end of its wait.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited
	err  error         // what Wait returned, once done is closed
}

// spawn starts cmd so that it dies with this process (deathsig.Spawn).
func spawn(cmd *exec.Cmd) (*process, error) {
	p := &process{cmd: cmd, done: make(chan struct{})}
	if err := deathsig.Spawn(cmd, func(err error) {
		p.err = err
		close(p.done)
	}); err != nil {
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
