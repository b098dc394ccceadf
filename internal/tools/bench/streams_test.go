package bench

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/internal/tools/broker"
)

func TestParseStatCPU(t *testing.T) {
	// A command name with a space and a parenthesis: the fields count
	// from the last ')'. utime 250 and stime 50 ticks: 3 s.
	line := "4242 (java (x) y) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 50 0 0 20 0 30 0 100 0 0\n"
	got, err := parseStatCPU([]byte(line))
	if err != nil || got != 3*time.Second {
		t.Fatalf("parseStatCPU = %v, %v; want 3s", got, err)
	}
	for _, bad := range []string{"", "4242 java S 1", "4242 (java) S 1 2", "4242 (java) S 1 4242 4242 0 -1 4194560 1000 0 0 0 x 50 0"} {
		if _, err := parseStatCPU([]byte(bad)); err == nil {
			t.Errorf("parseStatCPU(%q): no error", bad)
		}
	}
}

// TestStreamsCPUOfThisProcess reads this process's own /proc stat, which
// must show the CPU it has used (where there is /proc).
func TestStreamsCPUOfThisProcess(t *testing.T) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Skip("no /proc here:", err)
	}
	d, err := parseStatCPU(b)
	if err != nil {
		t.Fatal(err)
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	// Both count the same time, /proc in ticks of 10 ms.
	ru0 := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	if d > ru0+time.Second || d < ru0-time.Second {
		t.Errorf("/proc says %v, getrusage %v", d, ru0)
	}
}

func TestTailWriter(t *testing.T) {
	w := &tailWriter{max: 5}
	for _, s := range []string{"ab", "cdef", "g"} {
		if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if got := w.String(); got != "cdefg" {
		t.Errorf("tail %q, want %q", got, "cdefg")
	}
	if got := tail([]byte("abcdef"), 3); got != "…def" {
		t.Errorf("tail = %q", got)
	}
}

// TestStreamsSourcesEmbedded checks that the Maven module is in the
// binary, pinned to the broker's release and configured as the bench
// documents it.
func TestStreamsSourcesEmbedded(t *testing.T) {
	pom, err := streamsSources.ReadFile("streams/pom.xml")
	if err != nil {
		t.Fatal(err)
	}
	java, err := streamsSources.ReadFile("streams/src/main/java/throttler/bench/StreamsReference.java")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<kafka.version>4.3.1</kafka.version>", "<artifactId>kafka-streams</artifactId>", "<artifactId>jackson-databind</artifactId>",
		"<maven.compiler.release>17</maven.compiler.release>", "<finalName>streams-reference</finalName>"} {
		if !strings.Contains(string(pom), want) {
			t.Errorf("pom.xml lacks %s", want)
		}
	}
	for _, want := range []string{"COMMIT_INTERVAL_MS_CONFIG, 100", "PROCESSING_GUARANTEE_CONFIG, args[2]", "NUM_STREAM_THREADS_CONFIG",
		"MAPPER.readTree", "headers().add", "package throttler.bench;"} {
		if !strings.Contains(string(java), want) {
			t.Errorf("StreamsReference.java lacks %s", want)
		}
	}
	if h := sourcesHash(); len(h) != 12 || h != sourcesHash() {
		t.Errorf("sourcesHash %q", h)
	}
}

// TestStreamsSkippedWithoutJava: with no java on PATH the Streams side is
// skipped with the reason, and the rest of the bench runs.
func TestStreamsSkippedWithoutJava(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Run(ctx, Config{Records: 2000, Rounds: 1, Partitions: 2, DataDir: t.TempDir(), StreamsReference: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.StreamsSkipped, "no java on PATH") || len(res.Rounds) != 2 || res.StreamsRPS != 0 {
		t.Fatalf("result %+v", res)
	}
}

// TestStreamsClasspathWithoutMaven: an unbuilt reference with no mvn on
// PATH is unavailable (the side is skipped), and nothing is left in the
// cache directory.
func TestStreamsClasspathWithoutMaven(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	cache := t.TempDir()
	_, err := streamsClasspath(cache + "/streams")
	if !errors.Is(err, errNoJava) || !strings.Contains(err.Error(), "no mvn on PATH") {
		t.Fatalf("err = %v", err)
	}
	if ents, _ := os.ReadDir(cache); len(ents) != 0 {
		t.Errorf("cache holds %v", ents)
	}
}

// TestStreamsReference builds the Kafka Streams reference (once, in the
// user's cache directory), runs a tiny bench with it on kfake and checks
// that its JVM is gone afterwards; then that a run whose context ends in
// the middle of a Streams round stops the JVM too. It needs Java 17 and
// Maven, and takes about a minute the first time: it runs only with
// THROTTLER_BENCH_JAVA=1.
func TestStreamsReference(t *testing.T) {
	if os.Getenv("THROTTLER_BENCH_JAVA") != "1" {
		t.Skip("set THROTTLER_BENCH_JAVA=1 to run the Kafka Streams reference (Java 17 and Maven)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := Config{Records: 20000, Rounds: 1, Partitions: 4, DataDir: t.TempDir(), StreamsReference: true, StreamsWarmup: 2}
	res, err := Run(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if res.StreamsSkipped != "" || !(res.StreamsRPS > 0) || !(res.StreamsCPU > 0) || res.StreamsGuarantee != "exactly_once_v2" ||
		res.StreamsThreads < 1 || res.StreamsWarmup != 2 || len(res.Rounds) != 3 || res.Rounds[2].Side != sideStreams {
		t.Fatalf("result %+v", res)
	}

	// A run cut short in its Streams round: the JVM is stopped all the
	// same. The test finds the JVM through the state directory it is
	// given (throttler-bench-streams-*), and checks the JVM's pid is gone.
	before := streamsStateDirs(t)
	b, err := broker.Start(ctx, broker.Addr("127.0.0.1:0"), broker.DataDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	s, skip, err := startStreams(ctx, Config{}, b.Addrs())
	if err != nil || skip != "" {
		t.Fatal(err, skip)
	}
	pid := s.cmd.Process.Pid
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := broker.CreateTopics(ctx, kadm.NewClient(cl), 2, nil, "in", "p", "r"); err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithTimeout(ctx, 3*time.Second)
	defer rcancel()
	err = s.run(rctx, "idle", "in", "p", "r") // an empty input: it runs until the deadline
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("run = %v, want the deadline", err)
	}
	s.close()
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("JVM %d still there after close: %v", pid, err)
	}
	if after := streamsStateDirs(t); len(after) > len(before) {
		t.Errorf("state directories %v, before %v", after, before)
	}
}

func streamsStateDirs(t *testing.T) []string {
	ents, err := os.ReadDir(os.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.Type()&fs.ModeDir != 0 && strings.HasPrefix(e.Name(), "throttler-bench-streams-") {
			out = append(out, e.Name())
		}
	}
	return out
}
