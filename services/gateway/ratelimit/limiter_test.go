package ratelimit

import (
	"errors"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/itest"
)

func TestMain(m *testing.M) { os.Exit(itest.Main(m)) }

var t0 = time.Unix(1_700_000_000, 0)

func rules(t *testing.T, js string) Rules {
	t.Helper()
	r, err := Parse([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A tenant's scopes override the default's one by one; the default's unnamed scopes are
// DefaultTier's.
func TestRulesInherit(t *testing.T) {
	r := rules(t, `{"default": {"tenant": {"per_second": 1000, "burst": 2000}},
		"tenants": {"7": {"sender": {"per_second": 5, "burst": 10}}, "0000000000000001000000000000000a": {"connection": {"per_second": 0}}}}`)
	def, seven, big := r.For(contract.TenantID{Lo: 8}), r.For(contract.TenantID{Lo: 7}), r.For(contract.TenantID{Hi: 1, Lo: 10})
	if def.Connection != DefaultTier().Connection || def.Sender != DefaultTier().Sender || def.Tenant != (Rule{1000, 2000}) {
		t.Errorf("default tier = %+v", def)
	}
	if seven.Sender != (Rule{5, 10}) || seven.Connection != def.Connection || seven.Tenant != def.Tenant {
		t.Errorf("tenant 7 = %+v", seven)
	}
	if !big.Connection.Off() || big.Sender != def.Sender {
		t.Errorf("tenant 1:10 = %+v", big)
	}
}

func TestRulesRefuseWhatWouldMislead(t *testing.T) {
	for name, js := range map[string]string{
		"unknown scope":       `{"default": {"senders": {"per_second": 5, "burst": 10}}}`,
		"negative rate":       `{"default": {"sender": {"per_second": -1, "burst": 10}}}`,
		"rate without burst":  `{"default": {"sender": {"per_second": 5}}}`,
		"bad tenant":          `{"tenants": {"x7": {}}}`,
		"tenant twice":        `{"tenants": {"7": {}, "00000000000000000000000000000007": {}}}`,
		"day-long refill":     `{"default": {"tenant": {"per_second": 0.001, "burst": 100}}}`,
		"not an object":       `[]`,
		"trailing field typo": `{"default": {}, "tenant": {}}`,
	} {
		if _, err := Parse([]byte(js)); !errors.Is(err, ErrRules) {
			t.Errorf("%s: Parse = %v, want ErrRules", name, err)
		}
	}
}

// A sender's devices share one bucket; another sender of the tenant has its own. A refusal
// names the scope, says when a token is back, and takes none: the connection bucket the SEND had
// already passed gets its token back.
func TestSenderBucketSharedByDevicesNotBySenders(t *testing.T) {
	l := New(rules(t, `{"default": {"connection": {"per_second": 100, "burst": 3}, "sender": {"per_second": 2, "burst": 2}}}`), Options{})
	tn := contract.TenantID{Lo: 1}
	phone, laptop, other := l.Conn(tn), l.Conn(tn), l.Conn(tn)
	if v := l.Allow(phone, tn, 5, t0); !v.Allowed() {
		t.Fatalf("first send refused: %+v", v)
	}
	if v := l.Allow(laptop, tn, 5, t0); !v.Allowed() {
		t.Fatalf("second send refused: %+v", v)
	}
	v := l.Allow(laptop, tn, 5, t0)
	if v.Scope != ScopeSender || v.RetryAfter != 500*time.Millisecond {
		t.Fatalf("third send of the sender = %+v, want sender, 500ms", v)
	}
	if got := laptop.TokensAt(t0); got != 2 {
		t.Errorf("laptop's connection bucket holds %v after a sender refusal, want 2 (the refusal took none)", got)
	}
	if v := l.Allow(other, tn, 6, t0); !v.Allowed() {
		t.Errorf("another sender refused: %+v", v)
	}
	if v := l.Allow(phone, tn, 5, t0.Add(500*time.Millisecond)); !v.Allowed() {
		t.Errorf("send after RetryAfter refused: %+v", v)
	}
}

func TestConnectionAndTenantScopes(t *testing.T) {
	l := New(rules(t, `{"default": {"connection": {"per_second": 1, "burst": 1}, "sender": {"per_second": 0},
		"tenant": {"per_second": 10, "burst": 2}}}`), Options{})
	tn := contract.TenantID{Lo: 2}
	a := l.Conn(tn)
	if v := l.Allow(a, tn, 1, t0); !v.Allowed() {
		t.Fatal(v)
	}
	if v := l.Allow(a, tn, 1, t0); v.Scope != ScopeConnection || v.RetryAfter != time.Second {
		t.Errorf("second send on one connection = %+v, want connection, 1s", v)
	}
	if v := l.Allow(l.Conn(tn), tn, 2, t0); !v.Allowed() {
		t.Fatal(v)
	}
	if v := l.Allow(l.Conn(tn), tn, 3, t0); v.Scope != ScopeTenant || v.RetryAfter != 100*time.Millisecond {
		t.Errorf("third send of the tenant = %+v, want tenant, 100ms", v)
	}
	if v := l.Allow(l.Conn(contract.TenantID{Lo: 3}), contract.TenantID{Lo: 3}, 3, t0); !v.Allowed() {
		t.Errorf("another tenant refused: %+v", v)
	}
}

// fixture is a gateway's limiter on the stack's core Redis and a tenant no other run used.
func fixture(t *testing.T, rdb *redis.Client, js string) (*Limiter, contract.TenantID) {
	t.Helper()
	l := New(rules(t, js), Options{Redis: rdb, Gateway: "gw-" + strconv.FormatUint(rand.Uint64(), 16)})
	if err := l.Preload(t.Context()); err != nil {
		t.Fatal(err)
	}
	return l, contract.TenantID{Hi: 2, Lo: rand.Uint64()}
}

func coreRedis(t *testing.T) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: itest.Endpoints(t).RedisCore})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// Two gateways share a sender's bucket through the core Redis: what one admits after the other
// knows the bucket is taken from the other's tokens at the next exchange. What a admitted before
// b's first exchange is b's baseline and not taken (the documented leniency): b has 10 - 1 - 8.
func TestGatewaysShareASendersBucket(t *testing.T) {
	rdb := coreRedis(t)
	const js = `{"default": {"connection": {"per_second": 0}, "sender": {"per_second": 1, "burst": 10}}}`
	a, tn := fixture(t, rdb, js)
	b, _ := fixture(t, rdb, js)
	if v := a.Allow(nil, tn, 9, t0); !v.Allowed() {
		t.Fatal(v)
	}
	if v := b.Allow(nil, tn, 9, t0); !v.Allowed() {
		t.Fatal(v)
	}
	a.SyncOnce(t.Context(), t0) // a's baseline: b had not spoken yet
	b.SyncOnce(t.Context(), t0) // b's baseline: a's 1
	for i := range 8 {
		if v := a.Allow(nil, tn, 9, t0); !v.Allowed() {
			t.Fatalf("gateway a, send %d: %+v", i, v)
		}
	}
	a.SyncOnce(t.Context(), t0)
	b.SyncOnce(t.Context(), t0)
	if v := a.Allow(nil, tn, 9, t0); v.Scope != ScopeSender {
		t.Errorf("gateway a after 9 of its own and b's 1 = %+v, want sender", v)
	}
	if v := b.Allow(nil, tn, 9, t0); !v.Allowed() {
		t.Fatalf("gateway b's last token: %+v", v)
	}
	v := b.Allow(nil, tn, 9, t0)
	if v.Scope != ScopeSender || v.RetryAfter != time.Second {
		t.Fatalf("gateway b after a admitted 8 more of a burst of 10 = %+v, want sender, 1s", v)
	}
	if got, err := rdb.PTTL(t.Context(), Key(tn, 9)).Result(); err != nil || got <= 0 || got > silentGateway {
		t.Errorf("bucket key TTL = %v (%v), want (0, %v]", got, err, silentGateway)
	}
}

// A repeated exchange (a retry after a lost reply) takes nothing twice: the counts are absolute.
func TestShareIsIdempotent(t *testing.T) {
	rdb := coreRedis(t)
	const js = `{"default": {"connection": {"per_second": 0}, "sender": {"per_second": 0}, "tenant": {"per_second": 1, "burst": 100}}}`
	a, tn := fixture(t, rdb, js)
	b, _ := fixture(t, rdb, js)
	b.Allow(nil, tn, 1, t0)
	b.SyncOnce(t.Context(), t0)
	a.Allow(nil, tn, 2, t0)
	a.SyncOnce(t.Context(), t0)
	for range 5 {
		b.Allow(nil, tn, 1, t0)
	}
	for range 3 {
		b.SyncOnce(t.Context(), t0)
		a.SyncOnce(t.Context(), t0)
	}
	ta, _ := a.buckets.Get(bucketKey{tenant: tn})
	if got := ta.lim.TokensAt(t0); got != 100-1-5 {
		t.Errorf("gateway a's tenant bucket holds %v tokens, want 94 (its 1, b's 5 since a knew the bucket)", got)
	}
}

// Unreachable Redis is reported and changes no decision: the local buckets go on.
func TestUnreachableRedisFailsOpen(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer rdb.Close()
	obs := &recorder{}
	l := New(rules(t, `{"default": {"sender": {"per_second": 1, "burst": 2}}}`), Options{Redis: rdb, Gateway: "g", Observer: obs})
	tn := contract.TenantID{Lo: 4}
	for range 2 {
		if v := l.Allow(nil, tn, 1, t0); !v.Allowed() {
			t.Fatal(v)
		}
	}
	l.SyncOnce(t.Context(), t0)
	if v := l.Allow(nil, tn, 1, t0); v.Scope != ScopeSender {
		t.Errorf("third send with Redis down = %+v, want the local sender bucket's refusal", v)
	}
	if v := l.Allow(nil, tn, 2, t0); !v.Allowed() {
		t.Errorf("another sender with Redis down: %+v", v)
	}
	if obs.failures != 1 || obs.refused[ScopeSender] != 1 {
		t.Errorf("observer saw %d failed exchanges and %v refusals, want 1 and sender:1", obs.failures, obs.refused)
	}
}

type recorder struct {
	mu       sync.Mutex
	failures int
	refused  map[Scope]int
}

func (r *recorder) Refused(s Scope) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.refused == nil {
		r.refused = map[Scope]int{}
	}
	r.refused[s]++
}

func (r *recorder) Synced(_ int, _ time.Duration, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.failures++
	}
}
