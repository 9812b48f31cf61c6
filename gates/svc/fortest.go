package svc

import (
	"context"
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/contract/devtoken"
	"github.com/qim-dev/qim/gates/stack"
)

// StartForTest builds the services of the checkout at root into a temporary directory of t,
// starts all of them on ep and closes them when t ends: for test packages that drive the real
// services through a client of their own (the C ABI, the TypeScript SDK).
func StartForTest(ctx context.Context, t testing.TB, root string, ep stack.Endpoints) *Set {
	t.Helper()
	bin, err := Build(ctx, root, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	set, err := New(bin, ep)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = set.Close() })
	if err := set.StartAll(ctx); err != nil {
		t.Fatal(err)
	}
	return set
}

// DevToken is a dev token of the Set's secret for user on device, valid for an hour.
func (s *Set) DevToken(t testing.TB, user contract.UserID, device string) string {
	t.Helper()
	tok, err := devtoken.Issue([]byte(s.Addrs.TokenSecret), devtoken.Claims{User: user, Device: device,
		ExpiresAtMs: time.Now().Add(time.Hour).UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
