package session

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/commitlog"
	"github.com/qim-dev/qim/services/internal/dispatch"
	"github.com/qim-dev/qim/services/internal/rpcauth"
	"github.com/qim-dev/qim/services/internal/shardset"
)

func TestConfigValidate(t *testing.T) {
	valid := func() Config {
		return Config{RedisAddr: "127.0.0.1:6379", KafkaBrokers: []string{"127.0.0.1:9092"}, RPC: rpcauth.Config{PlaintextLoopback: true}}
	}
	c := valid()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.ShardCount != contract.MailboxShardsDefault || c.Topic != contract.TopicDispatch || c.ListenAddr != "127.0.0.1:7104" ||
		c.MetricsAddr != "127.0.0.1:9104" || c.PageSize != 20 || c.SnapshotUsers != 4096 || c.PollMax != 1024 || c.HeadBodyMax != 1024 ||
		c.FetchWait != 50*time.Millisecond || c.OwnedShards.String() != "0-63" {
		t.Fatalf("defaults not filled: %+v", c)
	}
	bad := []struct {
		name string
		mut  func(*Config)
		want string // the variable the error must name
	}{
		{"no redis", func(c *Config) { c.RedisAddr = "" }, "QIM_REDIS_ADDR"},
		{"redis without port", func(c *Config) { c.RedisAddr = "localhost" }, "QIM_REDIS_ADDR"},
		{"no brokers", func(c *Config) { c.KafkaBrokers = nil }, "QIM_KAFKA_BROKERS"},
		{"shards not a power of two", func(c *Config) { c.ShardCount = 48 }, "QIM_MAILBOX_SHARD_COUNT"},
		{"negative shards", func(c *Config) { c.ShardCount = -64 }, "QIM_MAILBOX_SHARD_COUNT"},
		{"bad listen", func(c *Config) { c.ListenAddr = "7104" }, "QIM_SESSION_LISTEN"},
		{"bad metrics", func(c *Config) { c.MetricsAddr = "9104" }, "QIM_SESSION_METRICS"},
		{"page above max", func(c *Config) { c.PageSize = maxPageSize + 1 }, "QIM_SESSION_PAGE_SIZE"},
		{"negative snapshot users", func(c *Config) { c.SnapshotUsers = -1 }, "QIM_SESSION_SNAPSHOT_USERS"},
		{"poll above max", func(c *Config) { c.PollMax = 16385 }, "QIM_SESSION_POLL_MAX"},
		{"head body above inline budget", func(c *Config) { c.HeadBodyMax = contract.InlineBodyBudgetBytes + 1 }, "QIM_SESSION_HEAD_BODY_MAX"},
		{"negative fetch wait", func(c *Config) { c.FetchWait = -time.Millisecond }, "QIM_SESSION_FETCH_WAIT"},
		{"fetch wait above max", func(c *Config) { c.FetchWait = maxFetchWait + time.Millisecond }, "QIM_SESSION_FETCH_WAIT"},
		{"owned shard beyond the count", func(c *Config) { c.ShardCount = 8; c.OwnedShards = shardset.Set{0, 8} }, "QIM_SESSION_OWNED_SHARDS"},
		{"owned shard twice", func(c *Config) { c.OwnedShards = shardset.Set{3, 1, 3} }, "QIM_SESSION_OWNED_SHARDS"},
	}
	for _, b := range bad {
		c := valid()
		b.mut(&c)
		if err := c.Validate(); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s: Validate = %v, want ErrConfig naming %s", b.name, err, b.want)
		}
	}
}

func TestFromEnv(t *testing.T) {
	t.Setenv("QIM_REDIS_ADDR", "127.0.0.1:1")
	t.Setenv("QIM_KAFKA_BROKERS", "a:1,b:2")
	t.Setenv("QIM_MAILBOX_SHARD_COUNT", "8")
	t.Setenv("QIM_SESSION_LISTEN", "127.0.0.1:0")
	t.Setenv("QIM_SESSION_PAGE_SIZE", "50")
	t.Setenv("QIM_SESSION_HEAD_BODY_MAX", "2048")
	t.Setenv("QIM_SESSION_DISPATCH_TOPIC", "qim.dispatch.migrate")
	t.Setenv("QIM_SESSION_FETCH_WAIT", "200ms")
	t.Setenv("QIM_SESSION_OWNED_SHARDS", "6,0-1")
	t.Setenv("QIM_DEV_ALLOW_RELAXED_REDIS", "true") // was silently read as false before the shared loader
	t.Setenv("QIM_RPC_PLAINTEXT_LOOPBACK", "1")
	c, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(c.KafkaBrokers) != 2 || c.ShardCount != 8 || c.PageSize != 50 || c.ListenAddr != "127.0.0.1:0" ||
		c.HeadBodyMax != 2048 || c.Topic != "qim.dispatch.migrate" || !c.AllowRelaxedRedis ||
		c.PollMax != 1024 || c.SnapshotUsers != 4096 || c.MetricsAddr != "127.0.0.1:9104" ||
		c.FetchWait != 200*time.Millisecond || !slices.Equal(c.OwnedShards, shardset.Set{0, 1, 6}) {
		t.Fatalf("FromEnv = %+v", c)
	}
	t.Setenv("QIM_SESSION_OWNED_SHARDS", "4-8") // parses, but shard 8 is not below the count of 8
	if c, err = FromEnv(); err == nil {
		err = c.Validate()
	}
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "QIM_SESSION_OWNED_SHARDS") {
		t.Fatalf("out-of-range owned shards: %v", err)
	}
	t.Setenv("QIM_SESSION_OWNED_SHARDS", "")
	t.Setenv("QIM_SESSION_POLL_MAX", "many")
	if _, err := FromEnv(); !errors.Is(err, ErrConfig) {
		t.Fatalf("malformed number: %v", err)
	}
}

func TestFromEnvRefusesGarbageNamingTheVariable(t *testing.T) {
	for name, value := range map[string]string{
		"QIM_SESSION_POLL_MAX":        "many",
		"QIM_SESSION_PAGE_SIZE":       "20rows",
		"QIM_SESSION_SNAPSHOT_USERS":  "4e3",
		"QIM_MAILBOX_SHARD_COUNT":     "0", // zero over a non-zero default is ambiguous
		"QIM_SESSION_HEAD_BODY_MAX":   "0",
		"QIM_DEV_ALLOW_RELAXED_REDIS": "yes",
		"QIM_KAFKA_BROKERS":           "a:1,,b:2",
		"QIM_SESSION_FETCH_WAIT":      "0",
		"QIM_SESSION_OWNED_SHARDS":    "0,,4", // an empty element is a typo, not "every shard"
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(name, value)
			_, err := FromEnv()
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), name) {
				t.Fatalf("%s=%s: %v", name, value, err)
			}
		})
	}
}

func TestDecodeDispatchRejects(t *testing.T) {
	n64, _ := contract.NewShardCount(64)
	for _, tc := range []struct {
		name string
		rec  commitlog.Record
	}{
		{"garbage", commitlog.Record{Value: []byte{0xff, 0xff}}},
		{"unknown schema", commitlog.Record{Value: []byte{0x08, 0x09}}}, // schema_version 9
		{"empty", commitlog.Record{}},
		{"recipients of another shard", misplannedDispatch(t, n64)},
	} {
		if _, err := decodeDispatch(tc.rec, n64); !errors.Is(err, ErrBadDispatch) {
			t.Errorf("%s: err = %v, want ErrBadDispatch", tc.name, err)
		}
	}
}

// misplannedDispatch is a well-formed dispatch (valid digest and dispatch_id) for shard 0 whose
// recipients live on other shards of n: it was planned as if the topic had one partition.
func misplannedDispatch(t *testing.T, n contract.ShardCount) commitlog.Record {
	t.Helper()
	tenant := contract.TenantID{Lo: 7}
	var users []uint64
	for u := contract.UserID(1); len(users) < 2; u++ {
		if n.UserShard(tenant, u) != 0 {
			users = append(users, uint64(u))
		}
	}
	mid, err := contract.NewMessageID(uint64(time.Now().UnixMilli()), 1, 0, 3)
	if err != nil {
		t.Fatal(err)
	}
	from, to := contract.UserID(users[0]), contract.UserID(users[1])
	mb, tb, cb := mid.Bytes(), tenant.Bytes(), contract.DirectConversationID(tenant, from, to).Bytes()
	rec := &internalv1.MessageRecord{TenantId: tb[:], ConversationId: cb[:], ConversationKind: uint32(contract.KindDirect),
		ConversationSeq: 1, MessageId: mb[:], SenderUserId: users[0], SenderDeviceId: "d", ClientMessageId: mb[:],
		MessageType: uint32(contract.MessageText), CreatedAtMs: time.Now().UnixMilli(), DirectPeerUserId: users[1]}
	envl := &internalv1.CommittedEnvelope{SchemaVersion: 1, Record: rec, CommittedAtMs: rec.GetCreatedAtMs(),
		Audience: &internalv1.FrozenAudience{Audience: &internalv1.FrozenAudience_Direct{
			Direct: &internalv1.DirectAudience{RecipientUserIds: users}}}}
	one, _ := contract.NewShardCount(1)
	ds, err := dispatch.Plan(envl, one, 0)
	if err != nil || len(ds) != 1 {
		t.Fatalf("plan: %v %v", ds, err)
	}
	v, err := proto.Marshal(ds[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decodeDispatch(commitlog.Record{Value: v}, one); err != nil {
		t.Fatalf("premise: the record is valid for a one-partition topic: %v", err)
	}
	return commitlog.Record{Partition: 0, Value: v}
}
