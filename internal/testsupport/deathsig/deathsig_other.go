//go:build !linux

package deathsig

import "os/exec"

// Set does nothing where the kernel has no parent-death signal: a child
// outlives a test binary that is killed (the tests' cleanups still stop
// it when they run).
func Set(*exec.Cmd) {}
