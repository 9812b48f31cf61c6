package admin

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/qim-dev/qim/services/authn/revocation"
)

// A kick is published on the kick channel for every gateway, names what it covers, and stores
// nothing; the answer counts the subscribers that received it.
func TestKickPublishes(t *testing.T) {
	f := newFixture(t, false)
	ctx := context.Background()
	sub := f.rdb.Subscribe(ctx, revocation.KickChannel)
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil { // the subscription's confirmation
		t.Fatal(err)
	}
	if status, _ := f.call(t, http.MethodPost, "/v1/kicks", opsKey, `{"user": 41}`); status != 403 {
		t.Fatalf("kick with a revocations-only key: %d, want 403", status)
	}
	status, out := f.call(t, http.MethodPost, "/v1/kicks", sessKey, `{"tenant": "0000000000000000000000000000002a", "user": 41, "device": "phone"}`)
	if status != 200 || out["gateways_reached"] != float64(1) {
		t.Fatalf("kick: %d %v, want 200 reaching 1 subscriber", status, out)
	}
	mctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	m, err := sub.ReceiveMessage(mctx)
	if err != nil {
		t.Fatal(err)
	}
	k, err := revocation.DecodeKick(m.Payload)
	if err != nil || k.Tenant.Lo != 42 || k.User != 41 || k.Device != "phone" {
		t.Fatalf("published %+v (%v)", k, err)
	}
	if status, _ := f.call(t, http.MethodPost, "/v1/kicks", sessKey, `{"user": 0}`); status != 400 {
		t.Fatalf("kick of user 0: %d, want 400", status)
	}
}
