package kafkabroker

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// DefaultVersion is the Apache Kafka release the tests run on: the one
// integration/kafka/pom.xml pins. THROTTLER_KAFKA_VERSION picks another
// fetched release (integration/kafka/fetch VERSION).
const DefaultVersion = "4.3.1"

// FetchCommand is the command, run from the repository's root, that puts
// the broker's jars where Lib finds them.
const FetchCommand = "integration/kafka/fetch"

// ErrUnavailable is returned (wrapped) by Lib and New when Java or the
// jars are missing; Start then skips the test.
var ErrUnavailable = errors.New("apache kafka is not available")

// Version returns the release the tests run: THROTTLER_KAFKA_VERSION, or
// DefaultVersion.
func Version() string {
	if v := os.Getenv("THROTTLER_KAFKA_VERSION"); v != "" {
		return v
	}
	return DefaultVersion
}

// Lib returns the directory of the broker's jars, THROTTLER_KAFKA_LIB or
// the user's cache directory's throttler/kafka-VERSION/lib, and the java
// command; an error wrapping ErrUnavailable when either is missing.
func Lib() (lib, java string, err error) {
	version := Version()
	lib = os.Getenv("THROTTLER_KAFKA_LIB")
	if lib == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return "", "", fmt.Errorf("%w: no cache directory (%v); set THROTTLER_KAFKA_LIB", ErrUnavailable, err)
		}
		lib = filepath.Join(cache, "throttler", "kafka-"+version, "lib")
	}
	if _, err := os.Stat(filepath.Join(lib, "kafka_2.13-"+version+".jar")); err != nil {
		return "", "", fmt.Errorf("%w: no kafka_2.13-%s.jar in %s; run `%s` from the repository's root (Maven)",
			ErrUnavailable, version, lib, fetchHint(version))
	}
	java, err = exec.LookPath("java")
	if err != nil {
		return "", "", fmt.Errorf("%w: no java on PATH (Java 17 or later runs Kafka 4)", ErrUnavailable)
	}
	return lib, java, nil
}

func fetchHint(version string) string {
	if version == DefaultVersion {
		return FetchCommand
	}
	return FetchCommand + " " + version
}
