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
