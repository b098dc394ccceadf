package bench

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// streamsSources is the Kafka Streams reference's Maven module.
//
//go:embed streams/pom.xml streams/src/main/java/throttler/bench/StreamsReference.java
var streamsSources embed.FS

// streamsMain is the reference's main class.
const streamsMain = "throttler.bench.StreamsReference"

// errNoJava is wrapped by the errors that skip the Streams side: a tool it
// needs is missing.
var errNoJava = errors.New("kafka streams reference unavailable")

// streamsCacheDir returns the default build directory of the sources:
// the user's cache directory's throttler/bench-streams-HASH, HASH naming
// the sources so that a change builds anew.
func streamsCacheDir() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for the Kafka Streams reference's build: %w", err)
	}
	return filepath.Join(cache, "throttler", "bench-streams-"+sourcesHash()), nil
}

// sourcesHash is the first 12 hex digits of the SHA-256 of the sources'
// paths and contents.
func sourcesHash() string {
	h := sha256.New()
	_ = fs.WalkDir(streamsSources, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := streamsSources.ReadFile(p)
		fmt.Fprintf(h, "%s\x00%d\x00", p, len(b))
		h.Write(b)
		return err
	})
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// streamsClasspath returns the built reference's classpath in dir,
// building it first (mvn -q package) when dir has no complete build. It
// returns an error wrapping errNoJava when Maven is needed and missing.
func streamsClasspath(dir string) (string, error) {
	cp := filepath.Join(dir, "target", "streams-reference.jar") + string(os.PathListSeparator) +
		filepath.Join(dir, "target", "lib", "*")
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err == nil {
		return cp, nil
	}
	mvn, err := exec.LookPath("mvn")
	if err != nil {
		return "", fmt.Errorf("%w: no mvn on PATH to build it (Maven 3, with Maven Central reachable)", errNoJava)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".tmp-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	err = fs.WalkDir(streamsSources, "streams", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := streamsSources.ReadFile(p)
		if err != nil {
			return err
		}
		dst := filepath.Join(tmp, strings.TrimPrefix(p, "streams/"))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		return "", err
	}
	cmd := exec.Command(mvn, "-q", "-B", "-Dstyle.color=never", "package")
	cmd.Dir = tmp
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building the Kafka Streams reference (mvn -q package in %s): %v\n%s", tmp, err, tail(out.Bytes(), 4096))
	}
	if err := os.WriteFile(filepath.Join(tmp, ".complete"), nil, 0o644); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another run built it at the same time: use that one.
		if _, serr := os.Stat(filepath.Join(dir, ".complete")); serr != nil {
			return "", err
		}
	}
	return cp, nil
}

// tail returns the last n bytes of b, marked as cut when longer.
func tail(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return "…" + string(b[len(b)-n:])
}
