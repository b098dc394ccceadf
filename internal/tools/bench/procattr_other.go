//go:build !linux

package bench

import "syscall"

// streamsProcAttr puts the JVM in a process group of its own (a terminal's
// interrupt reaches the bench, which stops it in order).
func streamsProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
