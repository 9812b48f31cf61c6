package pushtoken

import (
	"errors"
	"strings"
	"testing"

	"github.com/qim-dev/qim/contract"
)

// A registration is refused when the store must not hold it; an empty token is a removal and
// needs nothing else.
func TestCheck(t *testing.T) {
	ok := Registration{DeviceID: "phone", Platform: contract.PushAPNs, Token: "ab", AppID: "app"}
	for _, tc := range []struct {
		name string
		edit func(*Registration)
		bad  bool
	}{
		{"valid", func(*Registration) {}, false},
		{"removal needs no platform", func(r *Registration) { r.Token, r.Platform = "", 0 }, false},
		{"no device", func(r *Registration) { r.DeviceID = "" }, true},
		{"unknown platform", func(r *Registration) { r.Platform = 9 }, true},
		{"no platform", func(r *Registration) { r.Platform = 0 }, true},
		{"token too long", func(r *Registration) { r.Token = strings.Repeat("a", contract.PushTokenMaxBytes+1) }, true},
		{"token at the limit", func(r *Registration) { r.Token = strings.Repeat("a", contract.PushTokenMaxBytes) }, false},
		{"app id too long", func(r *Registration) { r.AppID = strings.Repeat("a", contract.PushAppIDMaxBytes+1) }, true},
	} {
		r := ok
		tc.edit(&r)
		if err := Check(r); (err != nil) != tc.bad || (err != nil && !errors.Is(err, ErrInvalid)) {
			t.Errorf("%s: Check = %v, want refused %v", tc.name, err, tc.bad)
		}
	}
}

// Key layouts match their declared families (the redis-artifacts gate classifies by them).
func TestKeysMatchTheirFamilies(t *testing.T) {
	fs := KeyFamilies()
	tok, done := TokenKey(contract.TenantID{Lo: 1}, 7), DoneKey(contract.TenantID{Lo: 1}, contract.MessageID{Lo: 2}, 7, "ph:one")
	if !fs[0].Match(tok) || fs[1].Match(tok) || !fs[1].Match(done) || fs[0].Match(done) {
		t.Errorf("%s / %s do not match exactly their own families", tok, done)
	}
}
