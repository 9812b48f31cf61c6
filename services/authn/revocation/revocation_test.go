package revocation_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/qim-dev/qim/services/authn/revocation"
)

func TestCoversAndInvalid(t *testing.T) {
	nb := time.UnixMilli(1000)
	for _, c := range []struct {
		issued time.Time
		want   bool
	}{{time.Time{}, true}, {time.UnixMilli(999), true}, {time.UnixMilli(1000), false}, {time.UnixMilli(2000), false}} {
		if got := revocation.Covers(nb, c.issued); got != c.want {
			t.Errorf("Covers(1000, %v) = %v", c.issued, got)
		}
	}
	if revocation.Covers(time.Time{}, time.Time{}) {
		t.Error("no revocation covers a credential")
	}
	for _, r := range []revocation.Revocation{{User: 0, Device: "d", NotBefore: nb}, {User: 1, Device: "", NotBefore: nb}, {User: 1, Device: "d"}} {
		if err := revocation.Revoke(context.Background(), nil, r); !errors.Is(err, revocation.ErrInvalid) {
			t.Errorf("Revoke(%+v) = %v", r, err)
		}
	}
	for _, m := range []string{"", "x:1:2:d", "00000000000000000000000000000000:0:5:d", "00000000000000000000000000000000:1:5:"} {
		if _, err := revocation.Decode(m); !errors.Is(err, revocation.ErrInvalid) {
			t.Errorf("Decode(%q) = %v", m, err)
		}
	}
}

func TestDecodeKick(t *testing.T) {
	k, err := revocation.DecodeKick("0000000000000000000000000000002a:7:ph:one")
	if err != nil || k.Tenant.Lo != 42 || k.User != 7 || k.Device != "ph:one" {
		t.Fatalf("DecodeKick = %+v, %v", k, err)
	}
	if !k.Covers("ph:one") || k.Covers("ph") {
		t.Error("a device kick covers its device only")
	}
	if all := (revocation.Kick{User: 7, Device: revocation.AllDevices}); !all.Covers("any") {
		t.Error("a user kick covers every device")
	}
	for _, m := range []string{"", "x:1:d", "00000000000000000000000000000000:0:d", "00000000000000000000000000000000:1:", "00000000000000000000000000000000:1"} {
		if _, err := revocation.DecodeKick(m); !errors.Is(err, revocation.ErrInvalid) {
			t.Errorf("DecodeKick(%q) = %v", m, err)
		}
	}
	if _, err := revocation.Publish(context.Background(), nil, revocation.Kick{User: 1}); !errors.Is(err, revocation.ErrInvalid) {
		t.Errorf("Publish without a device = %v", err)
	}
}
