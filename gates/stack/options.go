package stack

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/qim-dev/qim/contract"
)

// Defaults of the process provider's options.
const (
	DefaultDispatchShards = contract.MailboxShardsDefault // qim.dispatch partition = mailbox shard
	DefaultJavaHome       = "/usr/lib/jvm/java-17-openjdk-amd64"
	DefaultGrace          = 10 * time.Second
	projectPrefix         = "qim-it-"
)

// Readiness timeouts per server. A server that is not ready in time fails Up with a
// *NotReadyError carrying its log tail.
var readyTimeout = map[string]time.Duration{
	ServerRedisCore:    10 * time.Second,
	ServerRedisMailbox: 10 * time.Second,
	ServerKafka:        90 * time.Second,
	ServerCQL:          180 * time.Second,
}

// Option configures a stack (both providers read the options that apply to them).
type Option func(*config)

type config struct {
	root           string
	id             string
	cql            bool
	shards         int
	infraCache     string
	progress       io.Writer
	javaHome       string
	grace          time.Duration
	detached       bool
	redisServer    string
	redisImage     string
	redpandaImage  string
	scyllaImage    string
	kafkaHeap      string
	cassandraHeap  string
	extraKafkaProp map[string]string
	network        bool             // containers provider: the servers on a network of the stack's own
	secure         bool             // process provider: TLS and credentials on every store
	smallDisks     map[string]int64 // process provider: server → size of its tmpfs data dir
}

func newConfig(opts []Option) *config {
	c := &config{
		root:          os.TempDir(),
		shards:        DefaultDispatchShards,
		infraCache:    DefaultInfraCache(),
		progress:      io.Discard,
		javaHome:      DefaultJavaHome,
		grace:         DefaultGrace,
		redisImage:    "redis:7.2",
		redpandaImage: "docker.redpanda.com/redpandadata/redpanda:v25.2.4",
		scyllaImage:   "scylladb/scylla:6.2",
		kafkaHeap:     "512m",
		cassandraHeap: "1g",
	}
	for _, o := range opts {
		o(c)
	}
	if c.id == "" {
		c.id = randomID()
	}
	return c
}

// DefaultInfraCache is where scripts/fetch-infra.sh puts the Kafka and Cassandra jars:
// $QIM_INFRA_CACHE, else $HOME/.cache/qim/infra (outside the clone, so CI clones reuse it).
func DefaultInfraCache() string {
	if d := os.Getenv("QIM_INFRA_CACHE"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.TempDir()
	}
	return filepath.Join(home, ".cache", "qim", "infra")
}

// WithRoot sets the directory that holds project directories (default os.TempDir()).
func WithRoot(dir string) Option { return func(c *config) { c.root = dir } }

// WithProjectID sets the project id; the project is named qim-it-<id> (default: random hex).
func WithProjectID(id string) Option { return func(c *config) { c.id = id } }

// WithCQL also starts a CQL node (Cassandra 5.0 in the process provider, ScyllaDB in
// containers). Default false: it costs ~1.4 GiB RSS and tens of seconds.
func WithCQL(on bool) Option { return func(c *config) { c.cql = on } }

// WithDispatchShards sets the partition count of qim.dispatch (default 64).
func WithDispatchShards(n int) Option { return func(c *config) { c.shards = n } }

// WithInfraCache sets the jar cache filled by scripts/fetch-infra.sh (default DefaultInfraCache()).
func WithInfraCache(dir string) Option { return func(c *config) { c.infraCache = dir } }

// WithProgress sets where progress lines ("kafka ready in 9.2s") go (default: discarded).
func WithProgress(w io.Writer) Option { return func(c *config) { c.progress = w } }

// WithJavaHome sets the JDK used for Kafka and Cassandra (default DefaultJavaHome, JDK 17;
// Cassandra 5.0 cannot run on JDK 24+).
func WithJavaHome(dir string) Option { return func(c *config) { c.javaHome = dir } }

// WithGrace sets how long Down waits after SIGTERM before SIGKILL (default 10s).
func WithGrace(d time.Duration) Option { return func(c *config) { c.grace = d } }

// WithDetached lets the servers outlive the process that started them (for
// `qim-gate stack up`; stop them with DownProject). By default every server gets
// SIGKILL from the kernel when the starting process dies, so a crashed or timed-out
// test binary leaves no servers behind (its directory is removed by a later GC).
func WithDetached(on bool) Option { return func(c *config) { c.detached = on } }

// WithSecureStores starts every store the way a production deployment runs it (process
// provider only; default off): TLS only, with a throwaway CA and server certificate made in
// the project dir, and a user with a random password per store — a Redis ACL user (the default
// user off), Kafka SASL/SCRAM-SHA-512 on a SASL_SSL listener, a Cassandra role with
// PasswordAuthenticator and client encryption. Endpoints.Secure says where the CA and the
// password files are; the readiness probes use them.
func WithSecureStores(on bool) Option { return func(c *config) { c.secure = on } }

// WithRedisServer sets the redis-server binary (default: looked up on PATH).
func WithRedisServer(path string) Option { return func(c *config) { c.redisServer = path } }

// WithKafkaHeap sets Kafka's -Xmx (default 512m; -Xms is 256m).
func WithKafkaHeap(xmx string) Option { return func(c *config) { c.kafkaHeap = xmx } }

// WithCassandraHeap sets Cassandra's -Xms/-Xmx (default 1g).
func WithCassandraHeap(h string) Option { return func(c *config) { c.cassandraHeap = h } }

// WithKafkaProperty adds or overrides one server.properties entry of the process provider.
func WithKafkaProperty(key, value string) Option {
	return func(c *config) {
		if c.extraKafkaProp == nil {
			c.extraKafkaProp = map[string]string{}
		}
		c.extraKafkaProp[key] = value
	}
}

// WithNetwork makes the containers provider put every server on a network of the stack's own,
// under its host name there (HostRedisCore, HostRedisMailbox, HostKafka, HostCQL), so that
// containers started beside it find them by name as on compose.integration.yml's network
// (gates/svc.StartContainers). Default off. The process provider ignores it.
func WithNetwork(on bool) Option { return func(c *config) { c.network = on } }

// WithImageList is WithImages from "redis=IMAGE,redpanda=IMAGE,scylla=IMAGE" (any subset, ""
// for none): how tests take QIM_IT_IMAGES, on a host that runs local images
// (scripts/compose-standins/).
func WithImageList(list string) (Option, error) {
	img := map[string]string{}
	for _, kv := range strings.Split(list, ",") {
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || v == "" || (k != "redis" && k != "redpanda" && k != "scylla") {
			return nil, fmt.Errorf("stack: image list entry %q: want redis=, redpanda= or scylla=IMAGE", kv)
		}
		img[k] = v
	}
	return WithImages(img["redis"], img["redpanda"], img["scylla"]), nil
}

// WithImages overrides the container images (empty keeps the default: redis:7.2,
// redpandadata/redpanda v25.2.4, scylladb/scylla:6.2).
func WithImages(redis, redpanda, scylla string) Option {
	return func(c *config) {
		if redis != "" {
			c.redisImage = redis
		}
		if redpanda != "" {
			c.redpandaImage = redpanda
		}
		if scylla != "" {
			c.scyllaImage = scylla
		}
	}
}

// ProjectRoot returns the directory that holds project directories for these options
// (WithRoot, default os.TempDir()); pass it to GC and DownProject.
func ProjectRoot(opts ...Option) string {
	c := &config{root: os.TempDir()}
	for _, o := range opts {
		o(c)
	}
	return c.root
}
