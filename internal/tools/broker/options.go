package broker

import (
	"time"

	"github.com/rs/zerolog"
)

// Defaults of the options.
const (
	DefaultAddr               = "127.0.0.1:9092"
	DefaultPartitions         = 12
	DefaultCompactionInterval = time.Duration(0) // never: see compaction.go
)

// Opt configures Start.
type Opt interface{ apply(*cfg) }

type opt func(*cfg)

func (o opt) apply(c *cfg) { o(c) }

type cfg struct {
	addr       string
	advertise  string
	dataDir    string
	partitions int32
	seed       []string
	compaction time.Duration
	log        zerolog.Logger
	users      []SASLUser
	tlsCert    string
	tlsKey     string
}

func defaultCfg() cfg {
	return cfg{
		addr:       DefaultAddr,
		partitions: DefaultPartitions,
		compaction: DefaultCompactionInterval,
		log:        zerolog.Nop(),
	}
}

// Addr sets the host:port to listen on, overriding DefaultAddr
// ("127.0.0.1:9092"). Port 0 picks a free port; Broker.Addr tells which. A
// wildcard host ("", "0.0.0.0", "::") listens on every interface and needs
// Advertise for clients on other machines.
func Addr(hostport string) Opt { return opt(func(c *cfg) { c.addr = hostport }) }

// Advertise sets the address the broker tells clients to connect to, as
// "host" (with the listening port) or "host:port". By default it is the
// listening address, with 127.0.0.1 for a wildcard host.
func Advertise(hostport string) Opt { return opt(func(c *cfg) { c.advertise = hostport }) }

// DataDir persists the broker's topics, records, groups and transactions in
// dir, created if needed, and reloads them on the next Start with the same
// dir. The default, "", keeps everything in memory with no retention.
func DataDir(dir string) Opt { return opt(func(c *cfg) { c.dataDir = dir }) }

// Partitions sets the partition count of the SeedTopics and of topics
// created with the broker's default count, overriding DefaultPartitions
// (12).
func Partitions(n int32) Opt { return opt(func(c *cfg) { c.partitions = n }) }

// SeedTopics makes sure the topics exist when Start returns, creating the
// missing ones with Partitions partitions (a topic reloaded from DataDir
// keeps its count). Default none.
func SeedTopics(topics ...string) Opt {
	return opt(func(c *cfg) { c.seed = append(c.seed, topics...) })
}

// CompactionInterval sets how often the broker compacts topics with
// cleanup.policy=compact, at a moment when none holds an open transaction;
// 0, DefaultCompactionInterval, never (Broker.Compact compacts on
// request). kfake never compacts the newest batch of a partition, and its
// compaction can hide the committed records that transactional producers
// write after it (compaction.go).
func CompactionInterval(d time.Duration) Opt { return opt(func(c *cfg) { c.compaction = d }) }

// Logger receives the broker's logs: kfake's errors and warnings at those
// levels, its informational messages at debug and its debug messages at
// trace. Default: no logs.
func Logger(l zerolog.Logger) Opt { return opt(func(c *cfg) { c.log = l }) }

// SASLUser is a user the broker authenticates, with its mechanism: PLAIN,
// SCRAM-SHA-256 or SCRAM-SHA-512.
type SASLUser struct {
	Mechanism, User, Password string
}

// Users turns SASL authentication on: clients must authenticate as one of
// users (superusers: no ACLs apply). Default: no SASL. Start's own client
// (for the seed topics) authenticates as the first user.
func Users(users ...SASLUser) Opt {
	return opt(func(c *cfg) { c.users = append(c.users, users...) })
}

// TLS makes the broker accept TLS connections only, with the PEM
// certificate and key in certFile and keyFile. Default: plaintext.
func TLS(certFile, keyFile string) Opt {
	return opt(func(c *cfg) { c.tlsCert, c.tlsKey = certFile, keyFile })
}
