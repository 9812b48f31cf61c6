package contract

import (
	"errors"
	"testing"
)

var tenant2 = U128{Hi: 0x0102030405060708, Lo: 0x090a0b0c0d0e0f10}

// Frozen vectors, computed once and checked against an independent blake3 implementation.
// Changing them moves users to other lanes, buckets and shards: a data migration, not a refactor.
func TestRoutingVectors(t *testing.T) {
	cases := []struct {
		tenant         TenantID
		user           UserID
		lane           LaneID
		bucket         VirtualBucket
		shardOf64      uint32
		laneFromTenant bool
	}{
		{U128{}, 1, 32, 45414, 44, false},
		{U128{}, 2, 54, 2550, 2, false},
		{U128{}, 42, 46, 322, 0, false},
		{U128{}, 1 << 40, 23, 46422, 45, false},
		{tenant2, 1, 33, 53265, 53265 >> 10, true},
		{tenant2, 2, 45, 58246, 58246 >> 10, true},
	}
	shards, _ := NewShardCount(64)
	for _, c := range cases {
		if got := Lane(c.tenant, c.user); got != c.lane {
			t.Errorf("lane(%s,%d) = %d, want %d", c.tenant, c.user, got, c.lane)
		}
		if got := UserBucket(c.tenant, c.user); got != c.bucket {
			t.Errorf("bucket(%s,%d) = %d, want %d", c.tenant, c.user, got, c.bucket)
		}
		if got := shards.UserShard(c.tenant, c.user); got != c.shardOf64 {
			t.Errorf("shard64(%s,%d) = %d, want %d", c.tenant, c.user, got, c.shardOf64)
		}
	}
}

func TestDispatchIDVectors(t *testing.T) {
	m, _ := NewMessageID(1_700_000_000_000, 7, 1, 3)
	want := map[uint32]string{
		0:  "a484b9559d6a6f4ed870fda0fb1136f1",
		5:  "ed4ae5cf09378eec1623ecb225b34416",
		63: "36152d8ef62dee7a01b14d0c2833ccbc",
	}
	for shard, w := range want {
		if got := NewDispatchID(m, shard).String(); got != w {
			t.Errorf("dispatch_id(shard %d) = %s, want %s", shard, got, w)
		}
	}
}

func TestEndpointScope(t *testing.T) {
	variants := []Endpoint{
		{Address: "Chat.Example.com:7000", Mode: ModeTLS},
		{Address: "chat.example.com.:7000", Mode: ModeTLS, ServerName: "CHAT.example.com"},
	}
	for _, e := range variants {
		c, err := e.Canonical()
		if err != nil {
			t.Fatal(err)
		}
		if got, want := EndpointScope(c), "c7b837e4beaf03bf4c87230b8b0acd22"; got != want {
			t.Errorf("scope(%+v) = %s, want %s", e, got, want)
		}
	}
	plain, _ := Endpoint{Address: "chat.example.com:7000", Mode: ModeTCP}.Canonical()
	if EndpointScope(plain) == "c7b837e4beaf03bf4c87230b8b0acd22" {
		t.Fatal("TCP and TLS to the same address share a store scope")
	}
	for _, bad := range []Endpoint{{Address: "nohost", Mode: ModeTCP}, {Address: "h:1", Mode: "quic"}} {
		if _, err := bad.Canonical(); err == nil {
			t.Errorf("accepted %+v", bad)
		}
	}
}

func TestShardCountAndSplitLocality(t *testing.T) {
	for _, n := range []int{0, 3, 48, 65537, -1} {
		if _, err := NewShardCount(n); !errors.Is(err, ErrShardCount) {
			t.Errorf("shard count %d accepted", n)
		}
	}
	for n := 1; n < VirtualBucketCount; n *= 2 {
		a, _ := NewShardCount(n)
		b, _ := NewShardCount(2 * n)
		for _, bucket := range []VirtualBucket{0, 1, 1023, 1024, 40000, 65535} {
			sa, sb := a.MailboxShard(bucket), b.MailboxShard(bucket)
			if sb>>1 != sa || sa >= uint32(n) {
				t.Fatalf("doubling %d→%d shards moved bucket %d from shard %d to unrelated %d", n, 2*n, bucket, sa, sb)
			}
		}
	}
}

func TestCommitBucket(t *testing.T) {
	conv := DirectConversationID(U128{}, 1, 2)
	b := ConversationCommitBucket(U128{}, conv)
	if b != 53 || b.KeyTag() != "{b053}" {
		t.Fatalf("commit bucket vector changed: %d %s", b, b.KeyTag())
	}
	if _, err := b.Instance(3); err == nil {
		t.Fatal("3 instances cannot divide 256 buckets")
	}
	if i, err := b.Instance(8); err != nil || i != 53%8 {
		t.Fatalf("instance = %d, %v", i, err)
	}
}

func TestDeriveClientMessageID(t *testing.T) {
	if got := U128(DeriveClientMessageID(tenant2, 1)).String(); got != "453ee4aa3ed897524587a85b9525fbfb" {
		t.Fatalf("client_message_id vector changed: %s", got)
	}
	seen := map[ClientMessageID]bool{}
	for i := uint64(0); i < 1000; i++ {
		id := DeriveClientMessageID(tenant2, i)
		if seen[id] || U128(id).IsZero() {
			t.Fatalf("ordinal %d repeats or is zero", i)
		}
		seen[id] = true
	}
}
