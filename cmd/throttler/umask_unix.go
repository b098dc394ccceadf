//go:build unix

package main

import "syscall"

// privateFiles makes the files and directories the process creates from
// now on readable by its user only (umask 077).
func privateFiles() { syscall.Umask(0o077) }
