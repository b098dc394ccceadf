package integration

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"
	tckafka "github.com/testcontainers/testcontainers-go/modules/kafka"

	"github.com/throttler/throttler/config"
)

// DefaultKafkaImage is the image of the real-Kafka suite: the one the
// testcontainers kafka module is made for (KRaft, one node).
// THROTTLER_KAFKA_IMAGE overrides it (another confluent-local tag).
const DefaultKafkaImage = "confluentinc/confluent-local:7.5.0"

// dockerWait bounds the look for a Docker engine.
const dockerWait = 15 * time.Second

// requireDocker skips the test, saying why, when no Docker engine answers
// within dockerWait. testcontainers finds the engine from DOCKER_HOST,
// ~/.testcontainers.properties or the usual socket paths, and panics or
// errs when there is none; an engine that does not answer would block, so
// the look runs in a goroutine under a deadline.
func requireDocker(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), dockerWait)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				errc <- fmt.Errorf("testcontainers panicked: %v", r)
			}
		}()
		p, err := testcontainers.ProviderDocker.GetProvider()
		if err == nil {
			err = p.Health(ctx)
			p.Close()
		}
		errc <- err
	}()
	select {
	case err := <-errc:
		if err != nil {
			t.Skipf("skipped: no Docker engine reachable, so no real Kafka container (%v). The same suite body runs on the embedded broker in TestBadInputKfake.", err)
		}
	case <-ctx.Done():
		t.Skipf("skipped: the Docker engine did not answer within %v. The same suite body runs on the embedded broker in TestBadInputKfake.", dockerWait)
	}
}

// TestBadInputKafkaContainer runs the shared bad-input suite against a
// real Kafka broker in a container (testcontainers-go's kafka module,
// KRaft), when a Docker engine is reachable.
func TestBadInputKafkaContainer(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts a Kafka container")
	}
	requireDocker(t)
	image := DefaultKafkaImage
	if s := os.Getenv("THROTTLER_KAFKA_IMAGE"); s != "" {
		image = s
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	kc, err := tckafka.Run(ctx, image, tckafka.WithClusterID("throttler-test"))
	testcontainers.CleanupContainer(t, kc)
	if err != nil {
		t.Fatalf("start %s: %v", image, err)
	}
	brokers, err := kc.Brokers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s at %v", image, brokers)
	runBadInputSuite(t, brokers, config.Security{})
}
