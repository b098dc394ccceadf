//go:build !linux

package kafkabroker

import "os/exec"

// setDeathSignal does nothing where the kernel has no parent-death
// signal: a broker outlives a test binary that is killed (Close and the
// tests' cleanups still stop it).
func setDeathSignal(*exec.Cmd) {}
