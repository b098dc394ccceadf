package kafkabroker

import (
	"os/exec"
	"syscall"
)

// setDeathSignal makes the kernel SIGKILL cmd's process when the thread
// that starts it ends (PR_SET_PDEATHSIG), which happens when this process
// dies in any way, SIGKILL included.
func setDeathSignal(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
