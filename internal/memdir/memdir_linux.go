package memdir

import "syscall"

// scratchRoom is how much free space a tmpfs must have to hold scratch
// data dirs: a test's broker holds tens of megabytes.
const scratchRoom = 1 << 30

// memDir returns /dev/shm when it is a tmpfs with scratchRoom free, else
// "".
func memDir() string {
	const dir, tmpfsMagic = "/dev/shm", 0x01021994
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil || st.Type != tmpfsMagic {
		return ""
	}
	if uint64(st.Bavail)*uint64(st.Bsize) < scratchRoom {
		return ""
	}
	return dir
}

// alive reports whether process pid exists (one of another user counts:
// its directory is not this process's to remove).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}
