package msgstore

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
)

func reactOne(t *testing.T, s *Store, f fixture, target uint64, user contract.UserID, key string, remove bool) ReactResult {
	t.Helper()
	r, err := s.React(testCtx(t), ReactRequest{Tenant: f.tenant, Conversation: f.conv, Target: target, User: user, Key: key,
		Remove: remove, ExpireAtMs: time.Now().Add(time.Hour).UnixMilli()})
	if err != nil {
		t.Fatalf("react %d %q remove=%v: %v", user, key, remove, err)
	}
	return r
}

func countsString(cs []ReactionCount) string {
	out := ""
	for _, c := range cs {
		out += fmt.Sprintf("%s=%d", c.Key, c.Count)
		if c.Mine {
			out += "*"
		}
		out += " "
	}
	return out
}

// A message's counts are the number of users holding each key, in first-use order, "mine"
// relative to the reader; a repeated add or a remove of a key not held changes nothing; the
// limits refuse and write nothing; a count at 0 leaves the list.
func TestReactionsCountUsersAndAreIdempotent(t *testing.T) {
	s, f := New(coreClient(t)), newFixture(t)
	seqs := commitN(t, s, f, 3)
	const u1, u2 contract.UserID = 101, 102
	reactOne(t, s, f, seqs[0], u1, "👍", false)
	reactOne(t, s, f, seqs[0], u2, "👍", false)
	r := reactOne(t, s, f, seqs[0], u2, "🎉", false)
	if got := countsString(r.Counts); !r.Changed || got != "👍=2* 🎉=1* " {
		t.Fatalf("after three adds: changed %v counts %q", r.Changed, got)
	}
	if r := reactOne(t, s, f, seqs[0], u1, "👍", false); r.Changed || countsString(r.Counts) != "👍=2* 🎉=1 " {
		t.Fatalf("a repeated add: changed %v counts %q, want unchanged", r.Changed, countsString(r.Counts))
	}
	if r := reactOne(t, s, f, seqs[0], u1, "🎉", true); r.Changed {
		t.Fatal("removing a key not held changed something")
	}
	reactOne(t, s, f, seqs[0], u2, "🎉", true)
	for _, k := range []string{"a", "b"} {
		reactOne(t, s, f, seqs[1], u1, k, false)
	}
	got, err := s.Reactions(testCtx(t), f.tenant, f.conv, u2, seqs)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || countsString(got[seqs[0]]) != "👍=2* " || countsString(got[seqs[1]]) != "a=1 b=1 " {
		t.Fatalf("history view for u2: %v", got)
	}
	reactOne(t, s, f, seqs[1], u1, "c", false)
	if _, err := s.React(testCtx(t), ReactRequest{Tenant: f.tenant, Conversation: f.conv, Target: seqs[1], User: u1, Key: "d"}); !errors.Is(err, ErrReactionLimit) {
		t.Fatalf("a fourth key of one user: %v, want ErrReactionLimit", err)
	}
	for i := range contract.ReactionMaxKeys {
		reactOne(t, s, f, seqs[2], contract.UserID(200+i), fmt.Sprint("k", i), false)
	}
	if _, err := s.React(testCtx(t), ReactRequest{Tenant: f.tenant, Conversation: f.conv, Target: seqs[2], User: u1, Key: "one more"}); !errors.Is(err, ErrReactionLimit) {
		t.Fatalf("key %d of one message: %v, want ErrReactionLimit", contract.ReactionMaxKeys+1, err)
	}
	if r := reactOne(t, s, f, seqs[2], u1, "k0", false); countsString(r.Counts)[:6] != "k0=2* " {
		t.Fatalf("a held key of a full message can still be added: %q", countsString(r.Counts))
	}
}
