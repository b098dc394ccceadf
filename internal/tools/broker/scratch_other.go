//go:build !linux

package broker

// memDir returns "": only Linux's /dev/shm is looked for.
func memDir() string { return "" }
