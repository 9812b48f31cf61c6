package stack

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/gocql/gocql"
	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Readiness checks shared by the process and containers providers. A check returns nil when
// the server is usable exactly as Q-IM needs it; a *misconfigured error when it answers but is
// set up wrongly (retrying will not help); any other error while it is still starting.

type misconfigured struct{ msg string }

func (e *misconfigured) Error() string { return e.msg }

func misconf(format string, args ...any) error {
	return &misconfigured{msg: fmt.Sprintf(format, args...)}
}

// Verify runs every readiness check of ep (Redis config, Kafka topics, CQL if set): use it on
// a stack someone else started (QIM_IT_ENDPOINTS).
func Verify(ctx context.Context, ep Endpoints) error {
	var errs []error
	if err := checkRedis(ctx, ep.RedisCore, "always", ep.Secure); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", ServerRedisCore, err))
	}
	if err := checkRedis(ctx, ep.RedisMailbox, "everysec", ep.Secure); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", ServerRedisMailbox, err))
	}
	if err := checkKafka(ctx, ep.KafkaBrokers, ep.DispatchShards, ep.Secure); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", ServerKafka, err))
	}
	if ep.CQL != "" {
		if err := checkCQL(ctx, ep.CQL, ep.Secure); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", ServerCQL, err))
		}
	}
	return errors.Join(errs...)
}

// checkRedis: PING, redis_version >= 7.0, cluster disabled, not loading, and the persistence
// and eviction settings of redisArgs(fsync) read back with CONFIG GET. With sec, as the
// stack's ACL user over TLS.
func checkRedis(ctx context.Context, addr, fsync string, sec *SecureEndpoints) error {
	o, err := Endpoints{Secure: sec}.RedisOptions(addr)
	if err != nil {
		return misconf("%v", err)
	}
	o.MaxRetries, o.DialTimeout, o.ReadTimeout, o.PoolSize, o.DisableIdentity = -1, 2*time.Second, 2*time.Second, 1, true
	rdb := redis.NewClient(o)
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("PING %s: %w", addr, err)
	}
	info, err := rdb.Info(ctx, "server", "persistence", "cluster").Result()
	if err != nil {
		return fmt.Errorf("INFO %s: %w", addr, err)
	}
	kv := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			kv[k] = v
		}
	}
	if kv["loading"] == "1" {
		return fmt.Errorf("%s is loading its AOF", addr)
	}
	if major, _, _ := strings.Cut(kv["redis_version"], "."); atoi(major) < 7 {
		return misconf("%s runs redis %q, need >= 7.0", addr, kv["redis_version"])
	}
	if kv["cluster_enabled"] != "0" {
		return misconf("%s has cluster mode enabled (cluster_enabled:%s)", addr, kv["cluster_enabled"])
	}
	if kv["aof_enabled"] != "1" {
		return misconf("%s: aof_enabled:%s, want 1", addr, kv["aof_enabled"])
	}
	want := map[string]string{
		"appendonly":                "yes",
		"appendfsync":               fsync,
		"no-appendfsync-on-rewrite": "no",
		"maxmemory-policy":          "noeviction",
		"save":                      "",
	}
	for k, w := range want {
		got, err := rdb.ConfigGet(ctx, k).Result()
		if err != nil {
			return fmt.Errorf("CONFIG GET %s on %s: %w", k, addr, err)
		}
		if v, ok := got[k]; !ok || v != w {
			return misconf("%s: CONFIG GET %s = %q, want %q", addr, k, v, w)
		}
	}
	return nil
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}

// checkKafka: broker metadata answers, then qim.outbox (1 partition), qim.dispatch and the
// compacted qim.presence (shards partitions each) exist with RF 1 — created if missing — and
// every partition has a leader. With sec, as the stack's SCRAM user over TLS.
func checkKafka(ctx context.Context, brokers []string, shards int, sec *SecureEndpoints) error {
	if len(brokers) == 0 {
		return misconf("no Kafka brokers in endpoints")
	}
	if shards <= 0 {
		return misconf("dispatch shards must be > 0, got %d", shards)
	}
	opts, err := Endpoints{KafkaBrokers: brokers, Secure: sec}.KafkaOpts()
	if err != nil {
		return misconf("%v", err)
	}
	cl, err := kgo.NewClient(append(opts, kgo.DialTimeout(2*time.Second),
		kgo.RequestRetries(1), kgo.RetryTimeout(5*time.Second), kgo.MetadataMinAge(100*time.Millisecond))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	if len(md.Brokers) == 0 {
		return errors.New("metadata lists no brokers yet")
	}
	want := map[string]int{TopicOutbox: 1, TopicDispatch: shards, TopicPresence: shards, TopicFeed: shards}
	compact := "compact"
	for topic, parts := range want {
		var configs map[string]*string
		if topic == TopicPresence {
			configs = map[string]*string{"cleanup.policy": &compact}
		}
		resp, err := adm.CreateTopics(ctx, int32(parts), 1, configs, topic)
		if err != nil {
			return fmt.Errorf("create %s: %w", topic, err)
		}
		if r := resp[topic]; r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("create %s: %w (%s)", topic, r.Err, r.ErrMessage)
		}
	}
	td, err := adm.ListTopics(ctx, TopicOutbox, TopicDispatch, TopicPresence, TopicFeed)
	if err != nil {
		return fmt.Errorf("list topics: %w", err)
	}
	for topic, parts := range want {
		d, ok := td[topic]
		if !ok || d.Err != nil {
			return fmt.Errorf("topic %s not visible yet (%v)", topic, d.Err)
		}
		if len(d.Partitions) != parts {
			return misconf("topic %s has %d partitions, want %d", topic, len(d.Partitions), parts)
		}
		for _, p := range d.Partitions {
			if p.Err != nil || p.Leader < 0 {
				return fmt.Errorf("%s[%d] has no leader yet (%v)", topic, p.Partition, p.Err)
			}
		}
	}
	return nil
}

// CQLCluster returns a gocql config for a stack's CQL endpoint: protocol negotiated (v4 on
// Cassandra 5.0; never forced to v5), no peer discovery (one node, possibly behind a mapped
// port), quorum-free consistency One.
func CQLCluster(addr string) (*gocql.ClusterConfig, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, err
	}
	c := gocql.NewCluster(host)
	c.Port = port
	c.Consistency = gocql.One
	c.Timeout = 5 * time.Second
	c.ConnectTimeout = 3 * time.Second
	c.DisableInitialHostLookup = true
	c.NumConns = 1
	c.Logger = quietLogger{}
	return c, nil
}

type quietLogger struct{}

func (quietLogger) Print(...any)          {}
func (quietLogger) Printf(string, ...any) {}
func (quietLogger) Println(...any)        {}

// checkCQL: SELECT bootstrapped FROM system.local is COMPLETED. With sec, as the stack's
// role over TLS.
func checkCQL(ctx context.Context, addr string, sec *SecureEndpoints) error {
	c, err := Endpoints{CQL: addr, Secure: sec}.CQLClusterConfig()
	if err != nil {
		return misconf("CQL client for %q: %v", addr, err)
	}
	sess, err := c.CreateSession()
	if err != nil {
		return fmt.Errorf("connect %s: %w", addr, err)
	}
	defer sess.Close()
	var state string
	if err := sess.Query(`SELECT bootstrapped FROM system.local WHERE key = 'local'`).WithContext(ctx).Scan(&state); err != nil {
		return fmt.Errorf("query system.local on %s: %w", addr, err)
	}
	if state != "COMPLETED" {
		return fmt.Errorf("%s bootstrapped = %q, waiting for COMPLETED", addr, state)
	}
	return nil
}
