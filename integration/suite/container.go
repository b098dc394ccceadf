package suite

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

// DefaultKafkaImage is the image of the container kind: the one the
// testcontainers kafka module is made for (KRaft, one node).
// THROTTLER_KAFKA_IMAGE overrides it (another confluent-local tag).
const DefaultKafkaImage = "confluentinc/confluent-local:7.5.0"

// DockerWait bounds the look for a Docker engine.
const DockerWait = 15 * time.Second

// SharedContainer is the package's Kafka container, started on first use
// and stopped by Main.
var SharedContainer ContainerPool

type ContainerPool struct {
	Mu      sync.Mutex
	Looked  bool
	Skip    string // why there is no container: no Docker engine
	Brokers []string
	C       *tckafka.KafkaContainer
}

// Get returns the container's seed brokers, starting it, or skips t when
// no Docker engine answers.
func (p *ContainerPool) Get(t *testing.T) string {
	t.Helper()
	p.Mu.Lock()
	defer p.Mu.Unlock()
	if !p.Looked {
		p.Looked = true
		p.Skip = DockerMissing()
		if p.Skip == "" {
			p.Start(t)
		}
	}
	if p.Skip != "" {
		t.Skip(p.Skip)
	}
	return p.Brokers[0]
}

// Start runs the container (called once, under p.mu).
func (p *ContainerPool) Start(t *testing.T) {
	image := DefaultKafkaImage
	if s := os.Getenv("THROTTLER_KAFKA_IMAGE"); s != "" {
		image = s
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := tckafka.Run(ctx, image, tckafka.WithClusterID("throttler-test"))
	p.C = c
	if err != nil {
		p.Skip = fmt.Sprintf("skipped: the Kafka container %s did not start: %v", image, err)
		t.Errorf("start %s: %v", image, err)
		return
	}
	if p.Brokers, err = c.Brokers(ctx); err != nil || len(p.Brokers) == 0 {
		p.Skip = fmt.Sprintf("skipped: the Kafka container %s has no broker address: %v", image, err)
		t.Errorf("%s: no broker address: %v", image, err)
		return
	}
	t.Logf("%s at %v", image, p.Brokers)
}

// Close stops the container, if one runs.
func (p *ContainerPool) Close() {
	p.Mu.Lock()
	defer p.Mu.Unlock()
	if p.C != nil {
		if err := testcontainers.TerminateContainer(p.C); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the Kafka container:", err)
		}
	}
}

// DockerMissing says why no container can run ("" when a Docker engine
// answers within dockerWait). testcontainers finds the engine from
// DOCKER_HOST, ~/.testcontainers.properties or the usual socket paths,
// and panics or errs when there is none; an engine that does not answer
// would block, so the look runs in a goroutine under a deadline.
func DockerMissing() string {
	ctx, cancel := context.WithTimeout(context.Background(), DockerWait)
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
		return fmt.Sprintf("skipped: the Docker engine did not answer within %v; the kafka kinds run Apache Kafka without Docker", DockerWait)
	}
}
