package suite

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"testing"
	"time"
)

// RunBin runs the throttler binary to its end (within a minute) and
// returns its exit status and outputs.
func RunBin(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, Bin, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("%v: %v", args, err)
	}
	return code, out.String(), errOut.String()
}
