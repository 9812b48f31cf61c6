package keyfamily

import (
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	base := New("store.thing", Core, "qim:thing:<n>", "qim:thing:", `[0-9]+`).WithExample("qim:thing:7")
	hexConv := New("store.conv", Core, "qim:conv:<cid>", "qim:conv:", `[0-9a-f]{32}`).
		WithExample("qim:conv:" + strings.Repeat("0", 31) + "1")
	tests := []struct {
		name string
		f    Family
		want string // substring of the error; "" = valid
	}{
		{"expiring", base.Expiring(), ""},
		{"permanent with reason", base.Permanent("a counter"), ""},
		{"known unbounded", base.Expiring().KnownUnbounded("a trim"), ""},
		{"no rule", base, "reason they may live forever"},
		{"trimmed", base.TrimmedBy("a trim", false, func(string, []string) []Candidate { return nil }), ""},
		{"trimmed without candidates", base.TrimmedBy("a trim", false, nil), "names its candidates"},
		{"trimmed and expiring", base.TrimmedBy("a trim", false, func(string, []string) []Candidate { return nil }).Expiring(), "trimmed family"},
		{"permanent without reason", base.Permanent(""), "reason they may live forever"},
		{"unbounded permanent", base.Permanent("x").KnownUnbounded("y"), "only an expiring family"},
		{"no example", New("s.x", Core, "l", "p", "").Expiring(), "does not match"},
		{"example of another layout", base.WithExample("qim:thing:x").Expiring(), "does not match"},
		{"unknown instance", New("s.x", "cache", "l", "p", "").WithExample("p").Expiring(), "unknown instance"},
		{"entries in core", base.Expiring().Entries(), "mailbox instance"},
		{"no prefix", New("s.x", Core, "l", "", "x").WithExample("x").Expiring(), "required"},
		{"members naming conversations", base.Expiring().WithConversations(Conversations{In: HashField, OfMember: RawConversation}), ""},
		{"conversations nowhere", base.Expiring().WithConversations(Conversations{}), "neither in the key nor in members"},
		{"members without a reader", base.Expiring().WithConversations(Conversations{In: ZSetMember}), "need OfMember"},
		{"example naming no conversation", base.Expiring().WithConversations(Conversations{InKey: HexFieldInKey("qim:thing:", 0)}), "names no conversation"},
		{"conversation in the name", hexConv.Expiring().WithConversations(Conversations{InKey: HexFieldInKey("qim:conv:", 0)}), ""},
	}
	for _, tc := range tests {
		err := tc.f.Validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: Validate() = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// The pattern is anchored at both ends and the prefix is literal.
func TestMatch(t *testing.T) {
	f := New("store.thing", Core, "qim:th.ng:<n>", "qim:th.ng:", `[0-9]+`)
	for key, want := range map[string]bool{
		"qim:th.ng:12": true, "qim:th.ng:": false, "qim:th.ng:12x": false, "xqim:th.ng:12": false, "qim:thing:12": false,
	} {
		if got := f.Match(key); got != want {
			t.Errorf("Match(%q) = %v, want %v", key, got, want)
		}
	}
	if got := MatchingNames([]Family{f, New("store.other", Core, "qim:<any>", "qim:", `.*`)}, "qim:th.ng:1"); len(got) != 2 {
		t.Errorf("MatchingNames = %v, want both", got)
	}
}
