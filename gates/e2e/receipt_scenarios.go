package e2e

import (
	"context"
	"fmt"
	"time"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
)

// receiptsFullGroupWithin bounds one PULL_READ_RECEIPTS of a full group (1,000 members): one
// pipeline of 999 watermark reads behind the group's own read, on a loaded CI machine.
const receiptsFullGroupWithin = time.Second

// Group read receipts are pulled: the sender of a group message asks who read it and gets every
// other member's watermark and "read by n of m" over the members who can see it; a read made on
// the other gateway shows in the next pull; a full group of 1,000 answers in one frame within a
// second; a direct conversation is refused (its session entry carries the peer's watermark).
func scenarioGroupReceipts(ctx context.Context, e *Env) error {
	owner, a, b, c := e.User(), e.User(), e.User(), e.User()
	clients := map[contract.UserID]*Client{}
	for i, u := range []contract.UserID{owner, a, b} {
		cl, _, err := e.LoginAt(ctx, e.Gateways[i%len(e.Gateways)], u, "phone", 0)
		if err != nil {
			return err
		}
		defer cl.Close()
		clients[u] = cl
	}
	g, err := clients[owner].CreateGroup(ctx, NewCmid(), "receipts", a, b, c)
	if err != nil {
		return err
	}
	var seqs []uint64
	for i := range 2 {
		ack, err := clients[owner].SendGroup(ctx, g.GetGroupId(), NewCmid(), fmt.Appendf(nil, "read me %d", i))
		if err != nil {
			return err
		}
		seqs = append(seqs, ack.GetConversationSeq())
	}
	conv := g.GetConversationId()
	if _, err := clients[a].MarkRead(ctx, conv, seqs[1]); err != nil {
		return err
	}
	if _, err := clients[b].MarkRead(ctx, conv, seqs[0]); err != nil {
		return err
	}
	want := map[uint64][2]uint32{seqs[0]: {2, 3}, seqs[1]: {1, 3}}
	if err := checkReceipts(ctx, clients[owner], conv, want, map[contract.UserID]uint64{a: seqs[1], b: seqs[0], c: 0}); err != nil {
		return err
	}
	if _, err := clients[b].MarkRead(ctx, conv, seqs[1]); err != nil {
		return err
	}
	want[seqs[1]] = [2]uint32{2, 3}
	if err := checkReceipts(ctx, clients[owner], conv, want, map[contract.UserID]uint64{a: seqs[1], b: seqs[1], c: 0}); err != nil {
		return fmt.Errorf("after b's second read: %w", err)
	}
	direct := contract.DirectConversationID(e.Tenant, owner, a).Bytes()
	if _, err := clients[owner].PullReadReceipts(ctx, direct[:], 1); !isCode(err, contract.ErrCodeInvalidArgument) {
		return fmt.Errorf("PULL_READ_RECEIPTS of a direct conversation: %v, want INVALID_ARGUMENT", err)
	}
	return fullGroupReceipts(ctx, e, clients[owner])
}

// checkReceipts pulls the receipts of each seq of want ({read, audience}) and compares them and
// the members' watermarks.
func checkReceipts(ctx context.Context, c *Client, conv []byte, want map[uint64][2]uint32, marks map[contract.UserID]uint64) error {
	for seq, w := range want {
		r, err := c.PullReadReceipts(ctx, conv, seq)
		if err != nil {
			return err
		}
		if r.GetReadCount() != w[0] || r.GetAudienceCount() != w[1] {
			return fmt.Errorf("seq %d read by %d of %d, want %d of %d", seq, r.GetReadCount(), r.GetAudienceCount(), w[0], w[1])
		}
		if err := sameReads(r.GetReads(), marks); err != nil {
			return err
		}
	}
	return nil
}

func sameReads(reads []*qimv1.MemberRead, marks map[contract.UserID]uint64) error {
	if len(reads) != len(marks) {
		return fmt.Errorf("%d members' watermarks, want %d (every member but the asker)", len(reads), len(marks))
	}
	for _, m := range reads {
		if w, ok := marks[contract.UserID(m.GetUserId())]; !ok || m.GetReadConversationSeq() != w {
			return fmt.Errorf("member %d read %d, want %d (listed: %v)", m.GetUserId(), m.GetReadConversationSeq(), w, ok)
		}
	}
	return nil
}

// fullGroupReceipts creates a group of contract.GroupMaxMembers and pulls its receipts: one frame
// with 999 watermarks, within receiptsFullGroupWithin.
func fullGroupReceipts(ctx context.Context, e *Env, owner *Client) error {
	others := make([]contract.UserID, contract.GroupMaxMembers-1)
	for i := range others {
		others[i] = e.User()
	}
	g, err := owner.CreateGroup(ctx, NewCmid(), "full", others...)
	if err != nil {
		return err
	}
	start := time.Now()
	r, err := owner.PullReadReceipts(ctx, g.GetConversationId(), 1)
	took := time.Since(start)
	if err != nil {
		return fmt.Errorf("receipts of a full group: %w", err)
	}
	if len(r.GetReads()) != len(others) || r.GetAudienceCount() != uint32(len(others)) || r.GetReadCount() != 0 {
		return fmt.Errorf("full group: %d watermarks, read by %d of %d, want %d, 0 of %d",
			len(r.GetReads()), r.GetReadCount(), r.GetAudienceCount(), len(others), len(others))
	}
	if took > receiptsFullGroupWithin {
		return fmt.Errorf("receipts of a full group took %v, bound %v", took.Round(time.Millisecond), receiptsFullGroupWithin)
	}
	return nil
}

// Typing in a group reaches every other member — on the other gateway when there are two — within
// a second, and not the typist; a non-member's TYPING and a TYPING in a group above
// contract.TypingGroupMaxMembers reach nobody.
func scenarioGroupTyping(ctx context.Context, e *Env) error {
	owner, a, b, x := e.User(), e.User(), e.User(), e.User()
	cl := map[contract.UserID]*Client{}
	for i, u := range []contract.UserID{owner, a, b, x} {
		c, _, err := e.LoginAt(ctx, e.Gateways[i%len(e.Gateways)], u, "phone", 0)
		if err != nil {
			return err
		}
		defer c.Close()
		cl[u] = c
	}
	g, err := cl[owner].CreateGroup(ctx, NewCmid(), "typists", a, b)
	if err != nil {
		return err
	}
	// A push to each member proves its MailboxNode's push path knows its gateway, which typing
	// travels too (the CREATE is pushed to every member).
	for _, u := range []contract.UserID{a, b} {
		select {
		case <-cl[u].Pushes():
		case <-time.After(10 * time.Second):
			return fmt.Errorf("no PUSH_EVENTS of the group's creation to member %d within 10 s", u)
		}
	}
	if err := cl[owner].TypingGroup(ctx, g.GetConversationId(), true); err != nil {
		return err
	}
	for _, u := range []contract.UserID{a, b} {
		select {
		case ev := <-cl[u].TypingEvents():
			if ev.GetUserId() != uint64(owner) || !ev.GetTyping() || string(ev.GetConversationId()) != string(g.GetConversationId()) {
				return fmt.Errorf("TYPING_EVENT %v at member %d, want the owner typing in the group", ev, u)
			}
		case <-time.After(readSyncWithin):
			return fmt.Errorf("no TYPING_EVENT at member %d within %v", u, readSyncWithin)
		}
	}
	if err := cl[x].TypingGroup(ctx, g.GetConversationId(), true); err != nil {
		return err
	}
	big := make([]contract.UserID, contract.TypingGroupMaxMembers)
	big[0] = a
	for i := 1; i < len(big); i++ {
		big[i] = e.User()
	}
	large, err := cl[owner].CreateGroup(ctx, NewCmid(), "too many typists", big...)
	if err != nil {
		return err
	}
	if err := cl[owner].TypingGroup(ctx, large.GetConversationId(), true); err != nil {
		return err
	}
	quiet := time.After(readSyncWithin)
	for {
		select {
		case ev := <-cl[a].TypingEvents():
			return fmt.Errorf("member a got %v after a non-member's TYPING and one in a group of %d", ev, len(big)+1)
		case ev := <-cl[owner].TypingEvents():
			return fmt.Errorf("the typist got its own TYPING_EVENT %v", ev)
		case <-quiet:
			return nil
		}
	}
}

// A user who withholds its read receipts shows no read and sees none (the seed: privacy is
// symmetric): alice turns hers off and reads bob's message — bob gets no READ_RECEIPT and his row
// shows 0; alice may not pull a group's receipts; once she shares again her next read reaches him.
func scenarioReceiptsWithheld(ctx context.Context, e *Env) error {
	alice, bob, a, b, closeBoth, err := loginPair(ctx, e)
	if err != nil {
		return err
	}
	defer closeBoth()
	if set, err := a.SetReadReceipts(ctx, false); err != nil || set.GetShare() {
		return fmt.Errorf("SET_READ_RECEIPTS off: %v %v", set, err)
	}
	var seqs []uint64
	for i := range 2 {
		ack, err := b.Send(ctx, alice, NewCmid(), fmt.Appendf(nil, "private read %d", i))
		if err != nil {
			return err
		}
		seqs = append(seqs, ack.GetConversationSeq())
	}
	if _, err := a.Send(ctx, bob, NewCmid(), []byte("presence")); err != nil {
		return err
	}
	select { // bob's push path knows his gateway, which receipts travel too
	case <-b.Pushes():
	case <-time.After(10 * time.Second):
		return fmt.Errorf("no PUSH_EVENTS to bob within 10 s")
	}
	conv := contract.DirectConversationID(e.Tenant, alice, bob)
	cid := conv.Bytes()
	if _, err := a.MarkRead(ctx, cid[:], seqs[0]); err != nil {
		return err
	}
	select {
	case r := <-b.ReadReceipts():
		return fmt.Errorf("bob got READ_RECEIPT %v from alice, who withholds hers", r)
	case <-time.After(readSyncWithin):
	}
	if r, err := rowOf(ctx, b, conv); err != nil || (r != nil && r.GetPeerReadConversationSeq() != 0) {
		return fmt.Errorf("bob's row shows alice's withheld read: %v %v", r, err)
	}
	g, err := a.CreateGroup(ctx, NewCmid(), "private", bob)
	if err != nil {
		return err
	}
	if _, err := a.PullReadReceipts(ctx, g.GetConversationId(), 0); !isCode(err, contract.ErrCodeForbidden) {
		return fmt.Errorf("receipts pulled while withholding: %v, want FORBIDDEN", err)
	}
	if set, err := a.SetReadReceipts(ctx, true); err != nil || !set.GetShare() {
		return fmt.Errorf("SET_READ_RECEIPTS on: %v %v", set, err)
	}
	if _, err := a.MarkRead(ctx, cid[:], seqs[1]); err != nil {
		return err
	}
	select {
	case r := <-b.ReadReceipts():
		if r.GetReadConversationSeq() < seqs[1] {
			return fmt.Errorf("READ_RECEIPT %v, want alice at %d", r, seqs[1])
		}
	case <-time.After(readSyncWithin):
		return fmt.Errorf("no READ_RECEIPT within %v after alice shares again", readSyncWithin)
	}
	return nil
}
