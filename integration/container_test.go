package integration

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"
	tckafka "github.com/testcontainers/testcontainers-go/modules/kafka"
)

// The container kind: a Kafka broker in a container, through
// testcontainers-go's kafka module, where a Docker engine answers. It is
// one more way to get a real broker (the kafka kinds need only Java); it
// runs on request (THROTTLER_BROKERS=container) and in
// TestBadInputContainer, and skips, saying why, without Docker.

// DefaultKafkaImage is the image of the container kind: the one the
// testcontainers kafka module is made for (KRaft, one node).
// THROTTLER_KAFKA_IMAGE overrides it (another confluent-local tag).
const DefaultKafkaImage = "confluentinc/confluent-local:7.5.0"

// dockerWait bounds the look for a Docker engine.
const dockerWait = 15 * time.Second

// sharedContainer is the package's Kafka container, started on first use
// and stopped by TestMain.
var sharedContainer containerPool

type containerPool struct {
	mu      sync.Mutex
	looked  bool
	skip    string // why there is no container: no Docker engine
	brokers []string
	c       *tckafka.KafkaContainer
}

// get returns the container's seed brokers, starting it, or skips t when
// no Docker engine answers.
func (p *containerPool) get(t *testing.T) string {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.looked {
		p.looked = true
		p.skip = dockerMissing()
		if p.skip == "" {
			p.start(t)
		}
	}
	if p.skip != "" {
		t.Skip(p.skip)
	}
	return p.brokers[0]
}

// start runs the container (called once, under p.mu).
func (p *containerPool) start(t *testing.T) {
	image := DefaultKafkaImage
	if s := os.Getenv("THROTTLER_KAFKA_IMAGE"); s != "" {
		image = s
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := tckafka.Run(ctx, image, tckafka.WithClusterID("throttler-test"))
	p.c = c
	if err != nil {
		p.skip = fmt.Sprintf("skipped: the Kafka container %s did not start: %v", image, err)
		t.Errorf("start %s: %v", image, err)
		return
	}
	if p.brokers, err = c.Brokers(ctx); err != nil || len(p.brokers) == 0 {
		p.skip = fmt.Sprintf("skipped: the Kafka container %s has no broker address: %v", image, err)
		t.Errorf("%s: no broker address: %v", image, err)
		return
	}
	t.Logf("%s at %v", image, p.brokers)
}

// close stops the container, if one runs.
func (p *containerPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.c != nil {
		if err := testcontainers.TerminateContainer(p.c); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the Kafka container:", err)
		}
	}
}

// dockerMissing says why no container can run ("" when a Docker engine
// answers within dockerWait). testcontainers finds the engine from
// DOCKER_HOST, ~/.testcontainers.properties or the usual socket paths,
// and panics or errs when there is none; an engine that does not answer
// would block, so the look runs in a goroutine under a deadline.
func dockerMissing() string {
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
			return fmt.Sprintf("skipped: no Docker engine reachable, so no Kafka container (%v); the kafka kinds run Apache Kafka without Docker", err)
		}
		return ""
	case <-ctx.Done():
		return fmt.Sprintf("skipped: the Docker engine did not answer within %v; the kafka kinds run Apache Kafka without Docker", dockerWait)
	}
}
