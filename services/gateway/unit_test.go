package gateway

import (
	"errors"
	"testing"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/authn/revocation"
	"github.com/qim-dev/qim/services/internal/keyfamily"
	"github.com/qim-dev/qim/services/internal/rpcauth"
)

func validConfig() Config {
	return Config{WriterAddrs: []string{"127.0.0.1:7101"}, MailboxAddrs: []string{"127.0.0.1:7102"}, SessionAddrs: []string{"127.0.0.1:7104"}, RedisAddr: "127.0.0.1:6379",
		TokenSecret: Secret("unit-test-secret-0123456789"), RPC: rpcauth.Config{PlaintextLoopback: true}}
}

func TestSessionEpochKey(t *testing.T) {
	tenant := contract.TenantID{Hi: 0x0102030405060708, Lo: 0xa0b0c0d0e0f00010}
	got := string(appendSessionEpochKey(nil, tenant, 42, "phone:1"))
	// Golden: the key layout is persistent state; changing it resets every device's epoch.
	if want := "qim:sess:0102030405060708a0b0c0d0e0f00010:42:phone:1"; got != want {
		t.Fatalf("key = %q, want %q", got, want)
	}
}

// The session_epoch family holds every device id (a ':' or a newline included) and no key of
// the session's neighbouring qim:sess:list: and qim:sess:ckpt: layouts.
func TestSessionEpochKeyFamily(t *testing.T) {
	fams := KeyFamilies()
	if len(fams) != 3 {
		t.Fatalf("%d families, want session_epoch, revocation and presence_boot", len(fams))
	}
	for _, f := range fams {
		if err := f.Validate(); err != nil {
			t.Fatal(err)
		}
	}
	if got := keyfamily.MatchingNames(fams, bootKeyPrefix+"10.0.0.7:7103"); len(got) != 1 || got[0] != "gateway.presence_boot" {
		t.Fatalf("boot key in %v", got)
	}
	if got := keyfamily.MatchingNames(fams, revocation.Key(contract.TenantID{Lo: 1}, 42)); len(got) != 1 || got[0] != "gateway.revocation" {
		t.Fatalf("revocation key in %v", got)
	}
	tenant := contract.TenantID{Hi: 1, Lo: 2}
	for key, want := range map[string]bool{
		string(appendSessionEpochKey(nil, tenant, 42, "phone:1")): true,
		string(appendSessionEpochKey(nil, tenant, 42, "a\nb")):    true,
		string(appendSessionEpochKey(nil, tenant, 42, "")):        false,
		"qim:sess:list:00000000000000010000000000000002:42":       false,
		"qim:sess:ckpt:qim.dispatch":                              false,
	} {
		if got := len(keyfamily.MatchingNames(fams[:1], key)) == 1; got != want {
			t.Errorf("%q in gateway.session_epoch: %v, want %v", key, got, want)
		}
	}
}

func TestRegistry(t *testing.T) {
	r := newRegistry()
	k := userKey{contract.TenantID{Lo: 1}, 7}
	s1 := &session{key: k, device: "phone", epoch: 5, conn: &conn{}}
	s2 := &session{key: k, device: "laptop", epoch: 1, conn: &conn{}}
	s3 := &session{key: k, device: "phone", epoch: 6, conn: &conn{}}
	stale := &session{key: k, device: "phone", epoch: 4, conn: &conn{}}
	steps := []struct {
		name     string
		do       func() (*session, error)
		replaced *session
		err      error
		live     int
	}{
		{"first device", func() (*session, error) { return r.register(s1) }, nil, nil, 1},
		{"second device", func() (*session, error) { return r.register(s2) }, nil, nil, 2},
		{"newer login replaces", func() (*session, error) { return r.register(s3) }, s1, nil, 2},
		{"older epoch refused", func() (*session, error) { return r.register(stale) }, nil, errStaleSession, 2},
		{"replaced session cannot unregister the new one", func() (*session, error) { r.unregister(s1); return nil, nil }, nil, nil, 2},
		{"own unregister", func() (*session, error) { r.unregister(s3); return nil, nil }, nil, nil, 1},
		{"last device leaves", func() (*session, error) { r.unregister(s2); return nil, nil }, nil, nil, 0},
	}
	for _, st := range steps {
		got, err := st.do()
		if got != st.replaced || !errors.Is(err, st.err) {
			t.Fatalf("%s: replaced %v err %v", st.name, got, err)
		}
		if n := len(r.appendConns(nil, k)); n != st.live {
			t.Fatalf("%s: live connections %d, want %d", st.name, n, st.live)
		}
	}
	if len(r.shard(k).users) != 0 {
		t.Fatal("empty user entry not removed")
	}
}
