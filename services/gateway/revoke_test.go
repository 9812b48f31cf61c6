package gateway

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/itest"
	"github.com/qim-dev/qim/services/authn/revocation"
)

// The later of the user's and the device's revocation applies; a lift removes one; the channel
// carries each change.
func TestRevokeLiftAndAnnounce(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: itest.Endpoints(t).RedisCore})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	ps := rdb.Subscribe(ctx, revocation.Channel)
	t.Cleanup(func() { _ = ps.Close() })
	if _, err := ps.Receive(ctx); err != nil { // the subscription's confirmation
		t.Fatal(err)
	}
	tenant, user := contract.TenantID{Hi: 9, Lo: uint64(time.Now().UnixNano())}, contract.UserID(42)
	t1, t2 := time.UnixMilli(1_700_000_000_000), time.UnixMilli(1_700_000_500_000)
	if nb, err := revocation.NotBefore(ctx, rdb, tenant, user, "phone"); err != nil || !nb.IsZero() {
		t.Fatalf("nothing revoked: %v, %v", nb, err)
	}
	for _, r := range []revocation.Revocation{
		{Tenant: tenant, User: user, Device: "phone", NotBefore: t2},
		{Tenant: tenant, User: user, Device: revocation.AllDevices, NotBefore: t1},
	} {
		if err := revocation.Revoke(ctx, rdb, r); err != nil {
			t.Fatal(err)
		}
		m, err := ps.ReceiveMessage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := revocation.Decode(m.Payload); err != nil || got != r {
			t.Fatalf("announced %+v (%v), revoked %+v", got, err, r)
		}
	}
	for device, want := range map[string]time.Time{"phone": t2, "laptop": t1} {
		if nb, err := revocation.NotBefore(ctx, rdb, tenant, user, device); err != nil || !nb.Equal(want) {
			t.Fatalf("%s: not before %v (%v), want %v", device, nb, err, want)
		}
	}
	if err := revocation.Lift(ctx, rdb, revocation.Revocation{Tenant: tenant, User: user, Device: "phone"}); err != nil {
		t.Fatal(err)
	}
	if nb, _ := revocation.NotBefore(ctx, rdb, tenant, user, "phone"); !nb.Equal(t1) {
		t.Fatalf("after lifting the device's: %v, want the user's %v", nb, t1)
	}
}
