package docker

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/throttler/throttler/config"
)

type composeFile struct {
	Name     string             `yaml:"name"`
	Services map[string]service `yaml:"services"`
}

type service struct {
	Image     string `yaml:"image"`
	Build     *struct{ Context, Dockerfile string }
	Command   []string `yaml:"command"`
	Volumes   []string `yaml:"volumes"`
	Ports     []string `yaml:"ports"`
	DependsOn map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	Environment map[string]string `yaml:"environment"`
	Profiles    []string          `yaml:"profiles"`
}

func loadCompose(t *testing.T) composeFile {
	t.Helper()
	data, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	if err := yaml.Unmarshal(data, &c); err != nil { // resolves the << merges
		t.Fatalf("compose.yaml: %v", err)
	}
	return c
}

// flagValue returns the value after flag in args.
func flagValue(args []string, flag string) string {
	if i := slices.Index(args, flag); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

// TestCompose checks the compose file: Apache Kafka in KRaft mode, three
// workers of the throttler image running the mounted, valid config, each
// with its own metrics port, the load generator producing the budgets the
// config names, and everything pointed at the broker's advertised address.
func TestCompose(t *testing.T) {
	c := loadCompose(t)
	kafka, ok := c.Services["kafka"]
	if !ok || !strings.HasPrefix(kafka.Image, "apache/kafka:") {
		t.Fatalf("no apache/kafka service: %+v", kafka)
	}
	env := kafka.Environment
	if env["KAFKA_PROCESS_ROLES"] != "broker,controller" || env["KAFKA_CONTROLLER_QUORUM_VOTERS"] == "" {
		t.Errorf("kafka is not a KRaft broker and controller: %v", env)
	}
	broker := strings.TrimPrefix(env["KAFKA_ADVERTISED_LISTENERS"], "PLAINTEXT://")
	if broker != "kafka:9092" {
		t.Errorf("advertised listener %q", env["KAFKA_ADVERTISED_LISTENERS"])
	}
	for _, k := range []string{"KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR", "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR", "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR"} {
		if env[k] != "1" {
			t.Errorf("%s = %q: a one-node cluster needs 1 (exactly-once uses transactions)", k, env[k])
		}
	}

	cfg, err := config.Load("throttler.yaml")
	if err != nil {
		t.Fatalf("throttler.yaml: %v", err)
	}
	if !slices.Equal(cfg.Brokers, []string{broker}) {
		t.Errorf("config brokers %v, kafka advertises %s", cfg.Brokers, broker)
	}

	var workers []string
	ports := map[string]string{}
	for name, s := range c.Services {
		if len(s.Command) == 0 || s.Command[0] != "run" {
			continue
		}
		workers = append(workers, name)
		if s.Image != "throttler:local" || s.Build == nil || s.Build.Dockerfile != "docker/Dockerfile" || s.Build.Context != ".." {
			t.Errorf("%s: image %q, build %+v", name, s.Image, s.Build)
		}
		path := flagValue(s.Command, "--config")
		if !slices.Contains(s.Volumes, "./throttler.yaml:"+path+":ro") {
			t.Errorf("%s: --config %s is not the mounted throttler.yaml (%v)", name, path, s.Volumes)
		}
		if len(s.Ports) != 1 || !strings.HasSuffix(s.Ports[0], ":9090") {
			t.Errorf("%s: ports %v, want one mapping to the metrics port 9090", name, s.Ports)
		} else if prev, dup := ports[s.Ports[0]]; dup {
			t.Errorf("%s and %s publish the same port %s", prev, name, s.Ports[0])
		} else {
			ports[s.Ports[0]] = name
		}
		if s.DependsOn["topics"].Condition != "service_completed_successfully" {
			t.Errorf("%s: does not wait for the input topic: %v", name, s.DependsOn)
		}
	}
	if len(workers) != 3 {
		t.Errorf("workers %v, want three", workers)
	}
	if cfg.HTTP.Listen != ":9090" {
		t.Errorf("http.listen %q: the compose file publishes 9090", cfg.HTTP.Listen)
	}

	topics := c.Services["topics"]
	if flagValue(topics.Command, "--topic") != cfg.Topics.Input[0] || flagValue(topics.Command, "--bootstrap-server") != broker {
		t.Errorf("topics service %v does not create %s on %s", topics.Command, cfg.Topics.Input[0], broker)
	}

	lg := c.Services["loadgen"]
	if len(lg.Command) == 0 || lg.Command[0] != "loadgen" || flagValue(lg.Command, "--brokers") != broker ||
		flagValue(lg.Command, "--topic") != cfg.Topics.Input[0] {
		t.Fatalf("loadgen service: %v", lg.Command)
	}
	var names []string
	for _, b := range cfg.Budgets {
		names = append(names, b.Name)
	}
	for _, item := range strings.Split(flagValue(lg.Command, "--budgets"), ",") {
		name, _, _ := strings.Cut(item, ":")
		if !slices.Contains(names, name) {
			t.Errorf("loadgen sends budget %q, which the config does not have (%v)", name, names)
		}
	}
	if cfg.Fields.Budget != "campaign" || cfg.Fields.Key != "user" || cfg.Fields.ID != "id" {
		t.Errorf("config fields %+v do not read the load generator's events", cfg.Fields)
	}

	st := c.Services["status"]
	if len(st.Command) == 0 || st.Command[0] != "status" || flagValue(st.Command, "--stats-topic") != cfg.Topics.Stats {
		t.Errorf("status service %v does not read %s", st.Command, cfg.Topics.Stats)
	}
}

// TestDockerfile checks the Dockerfile: two stages, the builder's Go
// matching go.mod, a static (cgo-free) build, a non-root user.
func TestDockerfile(t *testing.T) {
	df, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	text := string(df)
	froms := regexp.MustCompile(`(?m)^FROM (\S+)`).FindAllStringSubmatch(text, -1)
	if len(froms) != 2 {
		t.Fatalf("want two stages, got %v", froms)
	}
	goVer := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(string(mod))
	if goVer == nil || froms[0][1] != "golang:"+goVer[1] {
		t.Errorf("builder %s, go.mod wants go %v", froms[0][1], goVer)
	}
	for _, want := range []string{"CGO_ENABLED=0", "USER nonroot", "COPY --from=build", `ENTRYPOINT ["/usr/local/bin/throttler"]`, "./cmd/throttler"} {
		if !strings.Contains(text, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	if !strings.Contains(froms[1][1], "nonroot") {
		t.Errorf("final stage %s is not a non-root base", froms[1][1])
	}
}
