package kafkabroker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The broker keeps what it acknowledged across a SIGKILL and a graceful
// stop, each followed by a restart on the same address, and serves
// transactions with the version it was formatted with.
func TestBrokerKillStopRestart(t *testing.T) {
	for _, v := range []int{1, 2} {
		t.Run(fmt.Sprintf("transaction.version=%d", v), func(t *testing.T) {
			b := Start(t, TransactionVersion(v))
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			if got := finalized(ctx, t, b.Addr(), "transaction.version"); got != v {
				t.Errorf("transaction.version %d, formatted with %d", got, v)
			}
			addr := b.Addr()
			produce(ctx, t, addr, 0, 100)
			b.Kill()
			if b.Running() {
				t.Fatal("running after Kill")
			}
			if err := b.Restart(); err != nil {
				t.Fatal(err)
			}
			produce(ctx, t, addr, 100, 200)
			if err := b.Stop(); err != nil {
				t.Fatal(err)
			}
			if err := b.Restart(); err != nil {
				t.Fatal(err)
			}
			if b.Addr() != addr {
				t.Fatalf("restarted on %s, was %s", b.Addr(), addr)
			}
			if got, err := CountCommitted(ctx, addr, "t", 3); err != nil || got != 200 {
				t.Errorf("read %d committed records after the restarts (%v), wrote 200", got, err)
			}
		})
	}
}

// A three-node cluster replicates every partition to all three nodes and
// serves transactions while any one node is stopped, in turn, and
// restarted; every node restarts on its own address.
func TestClusterRollingRestart(t *testing.T) {
	b := Start(t, Nodes(3))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	addr := b.Addr()
	if got := len(Seeds(b.Addr())); got != 3 {
		t.Fatalf("%d seeds in %q, want 3", got, addr)
	}
	produce(ctx, t, addr, 0, 100)
	for i := range 3 {
		if err := b.StopNode(i); err != nil {
			t.Fatal(err)
		}
		produce(ctx, t, addr, 100*(i+1), 100*(i+2))
		if err := b.RestartNode(i); err != nil {
			t.Fatal(err)
		}
	}
	if b.Addr() != addr {
		t.Fatalf("restarted on %s, was %s", b.Addr(), addr)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(Seeds(b.Addr())...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	details, err := kadm.NewClient(cl).ListTopics(ctx, "t", "__consumer_offsets", "__transaction_state")
	if err != nil {
		t.Fatal(err)
	}
	for _, td := range details {
		for _, p := range td.Partitions {
			if len(p.Replicas) != 3 {
				t.Errorf("%s[%d] has replicas %v, want 3", td.Topic, p.Partition, p.Replicas)
			}
		}
	}
	if got, err := CountCommitted(ctx, addr, "t", 3); err != nil || got != 400 {
		t.Errorf("read %d committed records after the restarts (%v), wrote 400", got, err)
	}
}

// finalized returns the finalized level of a feature.
func finalized(ctx context.Context, t *testing.T, addr, feature string) int {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range resp.FinalizedFeatures {
		if f.Name == feature {
			return int(f.MaxVersionLevel)
		}
	}
	return 0
}

// produce writes records from..to-1 to topic "t" in one transaction
// (creating the topic first).
func produce(ctx context.Context, t *testing.T, addr string, from, to int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(Seeds(addr)...), kgo.TransactionalID("kafkabroker-test"), kgo.DefaultProduceTopic("t"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 3, -1, nil, "t"); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Fatal(err)
	}
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := from; i < to; i++ {
		cl.Produce(ctx, &kgo.Record{Value: fmt.Appendf(nil, "%d", i)}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	// EndTransaction returns once the coordinator has logged the commit;
	// the partitions' markers are written after that. The test stops the
	// broker only once they are: a broker stopped between the two leaves
	// the restart to complete the commit, which is Kafka's business, not
	// this package's (docs/kafka-notes.md).
	adm := kadm.NewClient(cl)
	for {
		lso, err := adm.ListCommittedOffsets(ctx, "t")
		var hwm kadm.ListedOffsets
		if err == nil {
			hwm, err = adm.ListEndOffsets(ctx, "t")
		}
		if err == nil && lso.Error() == nil && hwm.Error() == nil && stable(lso, hwm) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the commit's markers of t: %v", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stable reports whether every partition's last stable offset is its
// high watermark: no transaction is open on it.
func stable(lso, hwm kadm.ListedOffsets) bool {
	ok := len(hwm) > 0
	hwm.Each(func(o kadm.ListedOffset) {
		l, found := lso.Lookup(o.Topic, o.Partition)
		ok = ok && found && l.Offset == o.Offset
	})
	return ok
}

// The package's release is the one integration/kafka/pom.xml pins.
func TestDefaultVersionIsThePomsRelease(t *testing.T) {
	pom, err := os.ReadFile("../../../integration/kafka/pom.xml")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`<kafka.version>([^<]+)</kafka.version>`).FindSubmatch(pom)
	if m == nil || string(m[1]) != DefaultVersion {
		t.Fatalf("pom.xml pins %q, DefaultVersion is %q", m, DefaultVersion)
	}
}

// Without the jars, Lib says which command fetches them.
func TestLibNamesTheFetchCommand(t *testing.T) {
	t.Setenv("THROTTLER_KAFKA_LIB", t.TempDir())
	_, _, err := Lib()
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), FetchCommand) {
		t.Fatalf("Lib() = %v, want ErrUnavailable naming %s", err, FetchCommand)
	}
	t.Setenv("THROTTLER_KAFKA_VERSION", "9.9.9")
	if _, _, err := Lib(); err == nil || !strings.Contains(err.Error(), FetchCommand+" 9.9.9") {
		t.Fatalf("Lib() = %v, want the fetch command of release 9.9.9", err)
	}
}

// Options the package owns are refused.
func TestReservedProperty(t *testing.T) {
	c := defaultCfg()
	Property("listeners", "PLAINTEXT://0.0.0.0:9092").apply(&c)
	if err := c.validate(); err == nil {
		t.Fatal("listeners accepted")
	}
}
