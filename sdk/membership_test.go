package sdk

import (
	"errors"
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
)

func page(version uint64, token string, more bool, users ...uint64) *qimv1.MembersBatch {
	b := &qimv1.MembersBatch{MembershipVersion: version, NextPageToken: []byte(token), HasMore: more}
	for _, u := range users {
		b.Members = append(b.Members, &qimv1.Member{UserId: u, JoinedAtSeq: u * 10})
	}
	return b
}

// The pager returns one version's members only: a version change between pages restarts the
// listing from the first page, and a server that would make it page forever is refused.
func TestMemberPager(t *testing.T) {
	group := contract.DeriveGroupID(contract.TenantID{}, 1, contract.U128{Lo: 1})
	tests := []struct {
		name  string
		pages []*qimv1.MembersBatch
		want  string // members and version, or the error's text
		// tokens are the page tokens the pager asks for after each page ("" = the first page)
		tokens []string
	}{
		{"one page", []*qimv1.MembersBatch{page(3, "", false, 1, 2)}, "v3 [1 2]", nil},
		{"two pages", []*qimv1.MembersBatch{page(3, "a", true, 1, 2), page(3, "", false, 5)}, "v3 [1 2 5]", []string{"a"}},
		{"version change restarts", []*qimv1.MembersBatch{page(3, "a", true, 1, 2), page(4, "b", true, 2, 3),
			page(4, "c", true, 1, 3), page(4, "", false, 7)}, "v4 [1 3 7]", []string{"a", "", "c"}},
		{"has_more without token", []*qimv1.MembersBatch{page(3, "", true, 1)}, "protocol", nil},
		{"has_more without members", []*qimv1.MembersBatch{page(3, "a", true)}, "protocol", nil},
		{"not ascending", []*qimv1.MembersBatch{page(3, "a", true, 2), page(3, "", false, 2)}, "protocol", []string{"a"}},
		{"zero user", []*qimv1.MembersBatch{page(3, "", false, 0)}, "protocol", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newMemberPager(group)
			var tokens []string
			got := ""
			for i, b := range tc.pages {
				next, done, err := p.add(b)
				if err != nil {
					got = "error"
					if errors.Is(err, ErrProtocol) {
						got = "protocol"
					}
					break
				}
				if done {
					if i != len(tc.pages)-1 {
						t.Fatalf("done after page %d of %d", i, len(tc.pages))
					}
					got = fmt.Sprintf("v%d %v", p.list.Version, users(p.list.Members))
					break
				}
				tokens = append(tokens, string(next))
			}
			if got != tc.want || fmt.Sprint(tokens) != fmt.Sprint(tc.tokens) {
				t.Fatalf("got %q asking for %q, want %q asking for %q", got, tokens, tc.want, tc.tokens)
			}
		})
	}
}

func users(ms []Member) []contract.UserID {
	out := make([]contract.UserID, len(ms))
	for i, m := range ms {
		out[i] = m.User
	}
	return out
}

func TestMemberPagerGivesUpOnAGroupThatKeepsChanging(t *testing.T) {
	p := newMemberPager(contract.DeriveGroupID(contract.TenantID{}, 1, contract.U128{Lo: 1}))
	var err error
	for v := uint64(1); err == nil && v < 100; v++ {
		_, _, err = p.add(page(v, "a", true, 1))
		if err == nil {
			_, _, err = p.add(page(v+1000, "b", true, 2)) // changed between the pages
		}
	}
	if err == nil || errors.Is(err, ErrProtocol) || p.restarts != membersMaxRestarts+1 {
		t.Fatalf("after %d restarts: %v, want a give-up after %d", p.restarts, err, membersMaxRestarts)
	}
}

func TestMemberPagerRefusesAnotherGroup(t *testing.T) {
	p := newMemberPager(contract.DeriveGroupID(contract.TenantID{}, 1, contract.U128{Lo: 1}))
	other := contract.DeriveGroupID(contract.TenantID{}, 1, contract.U128{Lo: 2}).Bytes()
	b := page(1, "", false, 1)
	b.GroupId = other[:]
	if _, _, err := p.add(b); !errors.Is(err, ErrProtocol) {
		t.Fatalf("another group's page: %v, want ErrProtocol", err)
	}
}

func TestServerErrorIsSentinel(t *testing.T) {
	tests := []struct {
		code contract.ErrorCode
		is   error
	}{
		{contract.ErrCodeNotMember, ErrNotMember},
		{contract.ErrCodeGroupFull, ErrGroupFull},
		{contract.ErrCodeInvalidArgument, ErrInvalid},
	}
	for _, tc := range tests {
		err := fmt.Errorf("wrapped: %w", &ServerError{Code: tc.code})
		for _, s := range []error{ErrNotMember, ErrGroupFull, ErrInvalid, ErrOffline} {
			if got := errors.Is(err, s); got != (s == tc.is) {
				t.Errorf("errors.Is(%s, %v) = %v", tc.code, s, got)
			}
		}
	}
}

func TestParseGroupID(t *testing.T) {
	group := contract.DeriveGroupID(contract.TenantID{}, 1, contract.U128{Lo: 1})
	short, _ := contract.GroupConversationID(contract.U128{Lo: 0xab})
	tests := []struct {
		in   string
		want contract.ConversationID
		ok   bool
	}{
		{group.String(), group, true},
		{"0x" + group.String(), group, true},
		{"ab", short, true},
		{"", contract.ConversationID{}, false},
		{"xyz", contract.ConversationID{}, false},
		{group.String() + "0", contract.ConversationID{}, false},
		{contract.DirectConversationID(contract.TenantID{}, 1, 2).String(), contract.ConversationID{}, false},
	}
	for _, tc := range tests {
		got, err := ParseGroupID(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseGroupID(%q) = %s, %v", tc.in, got, err)
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseGroupID(%q) error %v is not ErrInvalid", tc.in, err)
		}
	}
}

func TestDecodeMembership(t *testing.T) {
	body, _ := proto.Marshal(&qimv1.MembershipChange{Op: 3, ActorUserId: 4, UserIds: []uint64{5, 6}, MembershipVersion: 7,
		MemberCount: 2})
	ctl := Message{Type: contract.MessageControl, CustomType: contract.MembershipCustomType, HasBody: true, Body: body}
	mc, ok, err := DecodeMembership(ctl)
	if !ok || err != nil || mc.Op != contract.MembershipRemove || mc.Actor != 4 || fmt.Sprint(mc.Users) != "[5 6]" ||
		mc.Version != 7 || mc.MemberCount != 2 {
		t.Fatalf("decoded %+v %v %v", mc, ok, err)
	}
	if _, ok, _ := DecodeMembership(Message{Type: contract.MessageControl, CustomType: "other"}); ok {
		t.Fatal("a CONTROL message of another custom type decoded as membership")
	}
	if _, ok, _ := DecodeMembership(Message{Type: contract.MessageText, CustomType: contract.MembershipCustomType}); ok {
		t.Fatal("a TEXT message decoded as membership: only the server writes membership changes")
	}
	ctl.HasBody, ctl.Body = false, nil
	if _, ok, err := DecodeMembership(ctl); !ok || err == nil {
		t.Fatalf("body not inlined: ok %v err %v, want a membership message with an error", ok, err)
	}
	ctl.HasBody, ctl.Body = true, []byte{0xff}
	if _, ok, err := DecodeMembership(ctl); !ok || err == nil {
		t.Fatalf("malformed body: ok %v err %v", ok, err)
	}
}
