package docker

import (
	"os"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/throttler/throttler/config"
)

// TestComposeAvro checks the Avro overlay: a schema registry stored in
// the compose Kafka, the workers mounting a valid config that reads Avro
// through it, and the load generator registering its schema there.
func TestComposeAvro(t *testing.T) {
	base := loadCompose(t)
	data, err := os.ReadFile("compose.avro.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatalf("compose.avro.yaml: %v", err)
	}
	reg, ok := c.Services["schema-registry"]
	if !ok || !strings.HasPrefix(reg.Image, "confluentinc/cp-schema-registry:") ||
		reg.Environment["SCHEMA_REGISTRY_KAFKASTORE_BOOTSTRAP_SERVERS"] != "PLAINTEXT://kafka:9092" {
		t.Fatalf("schema-registry service: %+v", reg)
	}
	url := "http://schema-registry:8081"
	cfg, err := config.Load("throttler-avro.yaml")
	if err != nil {
		t.Fatalf("throttler-avro.yaml: %v", err)
	}
	if cfg.TopicFormat(cfg.Topics.Input[0]) != config.FormatAvro || !slices.Equal(cfg.SchemaRegistry.URLs, []string{url}) {
		t.Errorf("config format %+v, registry %v", cfg.Format, cfg.SchemaRegistry.URLs)
	}
	for name, s := range base.Services {
		if len(s.Command) == 0 || s.Command[0] != "run" {
			continue
		}
		o := c.Services[name]
		path := flagValue(s.Command, "--config")
		if !slices.Contains(o.Volumes, "./throttler-avro.yaml:"+path+":ro") || o.DependsOn["schema-registry"].Condition != "service_healthy" {
			t.Errorf("%s: overlay volumes %v, depends on %v", name, o.Volumes, o.DependsOn)
		}
	}
	lg := c.Services["loadgen"].Command
	if flagValue(lg, "--format") != "avro" || flagValue(lg, "--registry") != url ||
		flagValue(lg, "--topic") != cfg.Topics.Input[0] || flagValue(lg, "--brokers") != cfg.Brokers[0] {
		t.Errorf("loadgen overlay %v", lg)
	}
}
