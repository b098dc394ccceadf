package main

import (
	"os"
	"path/filepath"
	"runtime/pprof"
)

// checkOutFile returns a usage error naming flag when path ("" = unset)
// cannot be an output file: its directory is missing or is not a
// directory, or path is a directory. Commands check their output files
// before they start anything, rather than fail after a long run.
func checkOutFile(flag, path string) error {
	if path == "" {
		return nil
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return badFlag(flag, "%s is a directory", path)
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	switch {
	case err != nil:
		return badFlag(flag, "cannot write %s: %v", path, err)
	case !st.IsDir():
		return badFlag(flag, "cannot write %s: %s is not a directory", path, dir)
	}
	return nil
}

// startCPUProfile creates path and starts a CPU profile into it; stop
// ends the profile and closes the file.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
