package e2e

import (
	"context"
	"fmt"
	"time"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
)

// counts renders reactions as "key=n" ("*" when mine), for comparisons and errors.
func counts(rs []*qimv1.ReactionCount) string {
	out := ""
	for _, r := range rs {
		out += fmt.Sprintf("%s=%d", r.GetKey(), r.GetCount())
		if r.GetMine() {
			out += "*"
		}
		out += " "
	}
	return out
}

// Reactions are an aggregate, not messages (ADR-0038): alice's 👍 on bob's message reaches bob's
// devices — on the other gateway when there are two — as REACTION_EVENT within a second, both
// histories serve the counts (mine for the reactor only), nothing enters a mailbox, the unread
// and the session head stay as they were; a repeated REACT changes nothing; a stranger is
// refused; a group member's reaction shows in the other members' history.
func scenarioReactions(ctx context.Context, e *Env) error {
	alice, bob, a, b, closeBoth, err := loginPair(ctx, e)
	if err != nil {
		return err
	}
	defer closeBoth()
	sent, err := b.Send(ctx, alice, NewCmid(), []byte("react to me"))
	if err != nil {
		return err
	}
	presence, err := a.Send(ctx, bob, NewCmid(), []byte("presence")) // bob's push path knows his gateway
	if err != nil {
		return err
	}
	var before *qimv1.MailboxBatch
	if err := waitFor(ctx, "alice's message in bob's mailbox", func() (bool, error) {
		var err error
		before, err = b.Pull(ctx, 0)
		for _, ev := range before.GetEntries() {
			if ev.GetConversationSeq() == presence.GetConversationSeq() {
				return true, err
			}
		}
		return false, err
	}); err != nil {
		return err
	}
	seq := sent.GetConversationSeq()
	req := &qimv1.React{Target: &qimv1.React_PeerUserId{PeerUserId: uint64(bob)}, TargetSeq: seq, Key: "👍"}
	ack, err := a.React(ctx, req)
	if err != nil {
		return err
	}
	if !ack.GetChanged() || counts(ack.GetReactions()) != "👍=1* " {
		return fmt.Errorf("REACT_ACK %v, want changed, 👍=1 mine", ack)
	}
	select {
	case ev := <-b.ReactionEvents():
		if ev.GetUserId() != uint64(alice) || ev.GetTargetSeq() != seq || counts(ev.GetReactions()) != "👍=1 " {
			return fmt.Errorf("REACTION_EVENT %v, want alice's 👍 on %d", ev, seq)
		}
	case <-time.After(readSyncWithin):
		return fmt.Errorf("no REACTION_EVENT at bob within %v", readSyncWithin)
	}
	if again, err := a.React(ctx, req); err != nil || again.GetChanged() || counts(again.GetReactions()) != "👍=1* " {
		return fmt.Errorf("a repeated REACT: %v %v, want unchanged 👍=1 mine", again, err)
	}
	conv, _ := contract.ParseConversationID(sent.GetConversationId())
	for who, c := range map[string]*Client{"alice": a, "bob": b} {
		h, err := historyAt(ctx, c, conv, seq)
		if err != nil {
			return err
		}
		want := map[string]string{"alice": "👍=1* ", "bob": "👍=1 "}[who]
		if got := counts(h.GetReactions()); got != want {
			return fmt.Errorf("%s's history serves %q, want %q", who, got, want)
		}
	}
	after, err := b.Pull(ctx, 0)
	if err != nil {
		return err
	}
	if len(after.GetEntries()) != len(before.GetEntries()) {
		return fmt.Errorf("bob's mailbox went from %d to %d entries with a reaction: reactions are not messages",
			len(before.GetEntries()), len(after.GetEntries()))
	}
	if err := waitFor(ctx, "bob's row: head and unread of the messages alone", func() (bool, error) {
		r, err := rowOf(ctx, b, conv)
		if r != nil && (r.GetLatestConversationSeq() > presence.GetConversationSeq() || r.GetUnreadCount() > 1) {
			return false, fmt.Errorf("bob's row %v moved past the messages: a reaction counted as a message", r)
		}
		return r != nil && r.GetHead().GetConversationSeq() == presence.GetConversationSeq() && r.GetUnreadCount() == 1, err
	}); err != nil {
		return err
	}
	stranger, _, err := e.Login(ctx, e.User(), "phone", 0)
	if err != nil {
		return err
	}
	defer stranger.Close()
	if _, err := stranger.React(ctx, &qimv1.React{Target: &qimv1.React_PeerUserId{PeerUserId: uint64(bob)}, TargetSeq: seq,
		Key: "👎"}); !isCode(err, contract.ErrCodeInvalidArgument) && !isCode(err, contract.ErrCodeNotMember) {
		return fmt.Errorf("a stranger's REACT on a message of another pair: %v, want a refusal", err)
	}
	return groupReaction(ctx, e, a, b, alice, bob)
}

// groupReaction: bob reacts to a group message of alice's; carol's history serves the count and
// alice's devices get the event.
func groupReaction(ctx context.Context, e *Env, a, b *Client, alice, bob contract.UserID) error {
	carol := e.User()
	g, err := a.CreateGroup(ctx, NewCmid(), "reactions", bob, carol)
	if err != nil {
		return err
	}
	sent, err := a.SendGroup(ctx, g.GetGroupId(), NewCmid(), []byte("group news"))
	if err != nil {
		return err
	}
	if _, err := b.React(ctx, &qimv1.React{Target: &qimv1.React_GroupId{GroupId: g.GetGroupId()}, TargetSeq: 1,
		Key: "🎉"}); !isCode(err, contract.ErrCodeForbidden) {
		return fmt.Errorf("a REACT on the group's CREATE (CONTROL): %v, want FORBIDDEN", err)
	}
	ack, err := b.React(ctx, &qimv1.React{Target: &qimv1.React_GroupId{GroupId: g.GetGroupId()}, TargetSeq: sent.GetConversationSeq(), Key: "🎉"})
	if err != nil || counts(ack.GetReactions()) != "🎉=1* " {
		return fmt.Errorf("bob's group REACT: %v %v", ack, err)
	}
	select {
	case ev := <-a.ReactionEvents():
		if ev.GetUserId() != uint64(bob) || string(ev.GetConversationId()) != string(g.GetConversationId()) {
			return fmt.Errorf("REACTION_EVENT at alice %v, want bob's in the group", ev)
		}
	case <-time.After(readSyncWithin):
		return fmt.Errorf("no group REACTION_EVENT at alice within %v", readSyncWithin)
	}
	c, _, err := e.Login(ctx, carol, "phone", 0)
	if err != nil {
		return err
	}
	defer c.Close()
	conv, _ := contract.ParseConversationID(g.GetConversationId())
	h, err := historyAt(ctx, c, conv, sent.GetConversationSeq())
	if err != nil {
		return err
	}
	if got := counts(h.GetReactions()); got != "🎉=1 " {
		return fmt.Errorf("carol's history serves %q, want 🎉=1", got)
	}
	return nil
}
