// Package deathsig starts the child processes of tests (brokers, workers,
// load generators) so that they die with the test binary, whatever ends
// it: a failed test's cleanups, a SIGKILL, or go test's timeout panic,
// which runs no cleanup at all.
package deathsig

import (
	"os/exec"
	"runtime"
)

// Spawn starts cmd so that it dies with this process (Set). The child is
// started from a goroutine locked to its OS thread, which then waits for
// it and calls exited with what Wait returned: Linux sends the death
// signal when the thread that forked the child ends, and the Go runtime
// ends threads at will unless a goroutine holds one. The goroutine never
// unlocks, so the thread ends with it, after the child. Wait closes no
// pipe of the caller's when cmd's outputs are *os.File: read them to
// their end apart.
func Spawn(cmd *exec.Cmd, exited func(error)) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		Set(cmd)
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		exited(cmd.Wait())
	}()
	return <-started
}
