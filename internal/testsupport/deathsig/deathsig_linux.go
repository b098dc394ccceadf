package deathsig

import (
	"os/exec"
	"syscall"
)

// Set makes the kernel SIGKILL cmd's process when the thread that starts
// it ends (PR_SET_PDEATHSIG), which happens when this process dies in any
// way, SIGKILL and a test's timeout panic included. Start cmd from a
// goroutine locked to its OS thread (runtime.LockOSThread) that outlives
// the child, as Spawn does: the Go runtime ends unlocked threads at will.
func Set(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
