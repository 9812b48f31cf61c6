package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/sdk"
)

func TestParseUserList(t *testing.T) {
	tests := []struct{ in, want string }{
		{"2,3", "[2 3]"},
		{" 2, 3 4,", "[2 3 4]"},
		{"", "[]"},
		{"2,x", "error"},
		{"0", "error"},
	}
	for _, tc := range tests {
		got, err := parseUserList(tc.in)
		s := fmt.Sprint(got)
		if err != nil {
			s = "error"
		}
		if s != tc.want {
			t.Errorf("parseUserList(%q) = %s, want %s", tc.in, s, tc.want)
		}
	}
}

func TestMatchGroup(t *testing.T) {
	g1, _ := sdk.ParseGroupID("2aaa0000000000000000000000000001")
	g2, _ := sdk.ParseGroupID("2aab0000000000000000000000000002")
	direct := contract.DirectConversationID(contract.TenantID{}, 1, 2)
	convs := []sdk.Conversation{{ID: g1, Kind: contract.KindGroup}, {ID: g2, Kind: contract.KindGroup},
		{ID: direct, Kind: contract.KindDirect}}
	tests := []struct {
		arg  string
		want contract.ConversationID
		err  string
	}{
		{"2aaa", g1, ""},
		{"2AAB0000", g2, ""},
		{"2aa", contract.ConversationID{}, "2 known groups"},
		{"3", contract.ConversationID{}, "no known group"},
		{direct.String()[:6], contract.ConversationID{}, "no known group"},                         // a direct conversation is no group
		{"2fff0000000000000000000000000009", mustGroup(t, "2fff0000000000000000000000000009"), ""}, // full ids need not be known
		{"", contract.ConversationID{}, "no group"},
	}
	for _, tc := range tests {
		got, err := matchGroup(tc.arg, convs)
		if got != tc.want || (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("matchGroup(%q) = %s, %v; want %s, %q", tc.arg, got, err, tc.want, tc.err)
		}
	}
}

func mustGroup(t *testing.T, s string) contract.ConversationID {
	t.Helper()
	g, err := sdk.ParseGroupID(s)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestDescribeMembership(t *testing.T) {
	name := func(u contract.UserID) string {
		if u == 7 {
			return "you"
		}
		return strconv.FormatUint(uint64(u), 10)
	}
	ev := func(op contract.MembershipOp, actor contract.UserID, users ...contract.UserID) sdk.MembershipChanged {
		return sdk.MembershipChanged{MembershipChange: sdk.MembershipChange{Op: op, Actor: actor, Users: users, Name: "team\x1b"}}
	}
	tests := []struct {
		ev   sdk.MembershipChanged
		want string
	}{
		{ev(contract.MembershipCreate, 7, 7, 8, 9), `* you created "team?" with you, 8, 9`},
		{ev(contract.MembershipAdd, 8, 7), "* 8 added you"},
		{ev(contract.MembershipAdd, 0, 10, 11), "* an administrator added 10, 11"},
		{ev(contract.MembershipRemove, 8, 9), "* 8 removed 9"},
		{ev(contract.MembershipLeave, 9, 9), "* 9 left"},
		{ev(contract.MembershipOp(9), 8, 9), "* 8: MembershipOp(9) 9"},
		{sdk.MembershipChanged{Err: errors.New("no body")}, "* membership changed (no body)"},
	}
	for _, tc := range tests {
		if got := describeMembership(name, tc.ev); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}

// Offline, /gcreate records the group and lists it at once; /gmsg queues a message to it by the
// printed short id; the help names the group commands.
func TestGroupCommandsOffline(t *testing.T) {
	cmd, stdin, out := startDesktop(t, "127.0.0.1:1")
	if _, err := stdin.WriteString("/help\n/gcreate team 8,9\n/convs\n"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	var short string
	for short == "" && time.Now().Before(deadline) {
		if _, after, ok := strings.Cut(out.String(), "; /gmsg "); ok {
			short, _, _ = strings.Cut(after, " ")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if short == "" {
		t.Fatalf("no group created; output:\n%s", out.String())
	}
	if _, err := stdin.WriteString("/gmsg " + short + " hello team\n/pending\n/members " + short + "\n/quit\n"); err != nil {
		t.Fatal(err)
	}
	waitExit(t, cmd, 5*time.Second, out)
	for _, want := range []string{"/gcreate NAME", "with 3 members", "group " + short + ": latest #0, unread 0",
		"to group " + short, "to group " + short + " [queued]: hello team", "error: not connected (/login first)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
