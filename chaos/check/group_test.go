package check

import (
	"slices"
	"strings"
	"testing"

	"github.com/qim-dev/qim/chaos/history"
	"github.com/qim-dev/qim/contract"
)

// synthGroups builds a clean frame-lane history of group sends shaped like a loadgen group run:
// per group the membership as Group events, a CONTROL record at seq 1 (foreign in the durable
// read), then the members take turns sending perSender messages each, one every 20 ms, each
// pushed to and pulled by every member (the sender's own copy included) and read back from the
// group's durable history. Sends name the group conversation and no recipient. The third send
// of every group times out (info) before its late ack.
func synthGroups(groups, members, perSender int) []history.Event {
	g := &synth{mseq: make(map[contract.UserID]uint64)}
	for gi := range groups {
		g.group(gi, members, perSender)
	}
	for i := range g.stored {
		g.stored[i].AtUs = g.lastUs + 1_000_000
	}
	return append(g.ev, g.stored...)
}

// groupUser is member i of group gi, far from synthetic()'s 1:1 users.
func groupUser(gi, members, i int) contract.UserID {
	return contract.UserID(1_000_000 + gi*members + i)
}

func groupConv(gi int) contract.ConversationID {
	return contract.ConversationID{Hi: uint64(contract.KindGroup) << 60, Lo: uint64(gi + 1)}
}

func (g *synth) group(gi, members, perSender int) {
	conv := groupConv(gi)
	base := synthStartUs + int64(gi)*700
	for i := range members {
		g.add(history.Event{Lane: history.Frame, Sender: groupUser(gi, members, 0), Recipient: groupUser(gi, members, i),
			Conversation: conv}, history.Group, base-10_000)
	}
	g.mid++
	g.stored = append(g.stored, history.Event{Kind: history.Stored, Lane: history.Frame, Conversation: conv, ConvSeq: 1,
		MessageID: contract.MessageID{Hi: uint64(base) - 1, Lo: g.mid}, Foreign: true})
	seq := uint64(1)
	for j := range members * perSender {
		from := groupUser(gi, members, j%members)
		seq++
		g.mid++
		t := base + int64(j)*20_000
		send := history.Event{Lane: history.Frame, Sender: from, Ordinal: uint64(j / members), Conversation: conv}
		placed := send
		placed.MessageID, placed.ConvSeq = contract.MessageID{Hi: uint64(t), Lo: g.mid}, seq
		g.add(send, history.Invoke, t)
		if j == 2 {
			g.add(send, history.Info, t+2_500) // a timeout the late ack below overrides
		}
		g.add(placed, history.Ok, t+3_000)
		for i := range members {
			to := groupUser(gi, members, i)
			if to != from {
				p := placed
				p.Recipient = to
				g.add(p, history.Push, t+2_000)
			}
			g.deliver(placed, to, t+5_000+int64(i))
		}
		st := placed
		st.Kind = history.Stored
		g.stored = append(g.stored, st)
	}
}

// findEvent is the index of the first event matching ok.
func findEvent(ev []history.Event, ok func(*history.Event) bool) int {
	return slices.IndexFunc(ev, func(e history.Event) bool { return ok(&e) })
}

func TestGroupSyntheticHistoryPasses(t *testing.T) {
	for _, size := range [][3]int{{1, 2, 1}, {3, 5, 4}, {2, 100, 2}} {
		events := synthGroups(size[0], size[1], size[2])
		res := mustCheck(t, events, Options{})
		sends := size[0] * size[1] * size[2]
		if !res.Passed || res.Acked != sends || res.Delivered != sends {
			t.Fatalf("synthGroups%v, %d events: %s; examples %v", size, len(events), res.Summary(), res.Examples)
		}
	}
	// Group sends and 1:1 sends of both lanes judged together.
	mixed := h(synthetic(2, 5), synthGroups(2, 4, 3))
	if res := mustCheck(t, mixed, Options{}); !res.Passed || res.Acked != 4*2*5+2*4*3 {
		t.Fatalf("mixed history: %s %v", res.Summary(), res.Examples)
	}
}

// TestGroupLostDeliveryIsLost: one member (not the first, not the sender) never got one acked
// group send. The checker reports exactly one LOST, naming that member and that send; without
// the group's recipients it would see no recipient at all.
func TestGroupLostDeliveryIsLost(t *testing.T) {
	clean := synthGroups(2, 4, 3)
	victim, sender := groupUser(1, 4, 2), groupUser(1, 4, 0)
	i := findEvent(clean, func(e *history.Event) bool {
		return e.Kind == history.Deliver && e.Recipient == victim && e.Sender == sender && e.Ordinal == 1
	})
	if i < 0 {
		t.Fatal("no delivery to drop")
	}
	key := clean[i].Key()
	res := mustCheck(t, slices.Delete(slices.Clone(clean), i, i+1), Options{})
	if !sameVerdicts(res, []Verdict{Lost}) || res.Counts[Lost] != 1 || res.Delivered != res.Acked-1 {
		t.Fatalf("got %v: %s", failures(res), res.Summary())
	}
	if f := res.Examples[Lost][0]; f.Recipient != victim || f.Key != key || f.Conversation != groupConv(1) {
		t.Fatalf("finding %s, want member %d and send %s", f, victim, key)
	}
}

// TestGroupDuplicateIsDuplicate: one member got one group send under a second message id (a
// double commit): exactly one DUPLICATE, naming that member; the other members are fine.
func TestGroupDuplicateIsDuplicate(t *testing.T) {
	clean := synthGroups(2, 4, 3)
	victim := groupUser(0, 4, 3)
	i := findEvent(clean, func(e *history.Event) bool {
		return e.Kind == history.Deliver && e.Recipient == victim && e.Sender != victim
	})
	d := clean[i]
	d.MessageID, d.AtUs, d.MailboxSeq = freshMid(clean), d.AtUs+1, 1<<30
	for _, e := range clean {
		if e.Conversation == d.Conversation {
			d.ConvSeq = max(d.ConvSeq, e.ConvSeq+1)
		}
	}
	res := mustCheck(t, h(clean, d), Options{})
	if !sameVerdicts(res, []Verdict{Duplicate}) || res.Counts[Duplicate] != 1 {
		t.Fatalf("got %v: %s", failures(res), res.Summary())
	}
	if f := res.Examples[Duplicate][0]; f.Recipient != victim || f.Key != d.Key() {
		t.Fatalf("finding %s, want member %d", f, victim)
	}
}

// TestGroupMutationsAreFound plants every fault of the 1:1 mutation table in a clean group
// history: each is found with exactly its verdicts, per member (the stall too: a member's
// mailbox holds acked group messages).
func TestGroupMutationsAreFound(t *testing.T) {
	clean := synthGroups(3, 5, 4)
	for _, mu := range mutations {
		t.Run(mu.kind, func(t *testing.T) {
			mutant, ok := mutate(mu.kind, clean)
			if !ok {
				t.Fatal("no event to mutate")
			}
			res := mustCheck(t, mutant, Options{StallAfter: DefaultStallAfter})
			if want := append(slices.Clone(mu.want), mu.alsoSynthetic...); res.Passed || !sameVerdicts(res, want) {
				t.Fatalf("got %v, want exactly %v: %s\n%v", failures(res), want, res.Summary(), res.Examples)
			}
		})
	}
}

// TestGroupWithoutMembershipIsLost: acked group sends whose group has no Group events have no
// evidence of reaching anyone: LOST, one per send, never a pass.
func TestGroupWithoutMembershipIsLost(t *testing.T) {
	ev := slices.DeleteFunc(synthGroups(1, 3, 2), func(e history.Event) bool { return e.Kind == history.Group })
	res := mustCheck(t, ev, Options{})
	if !sameVerdicts(res, []Verdict{Lost}) || res.Counts[Lost] != 6 ||
		!strings.Contains(res.Examples[Lost][0].Detail, "members the history does not record") {
		t.Fatalf("got %v: %s %v", failures(res), res.Summary(), res.Examples)
	}
}

// TestGroupPartialInfoSendIsGap: a group send of unknown outcome that one member got and
// another did not was committed (the delivery proves it) and is a hole at the other member, even
// without a durable-history read: GAP, naming that member. Delivered to nobody it is only
// UNKNOWN_ABSENT.
func TestGroupPartialInfoSendIsGap(t *testing.T) {
	conv := groupConv(0)
	x := func(k history.Kind, atMs int64, to contract.UserID) history.Event {
		e := history.Event{Kind: k, AtUs: atMs * 1000, Lane: history.Frame, Sender: 1, Recipient: to, Conversation: conv}
		if k != history.Group {
			e.Ordinal = 2 // invoked after ordinal 1 was acked at seq 11
		}
		if k == history.Deliver {
			e.MessageID, e.ConvSeq = contract.MessageID{Lo: 7}, 12
		}
		return e
	}
	members := h(x(history.Group, 1, 1), x(history.Group, 1, 2), x(history.Group, 1, 3))
	acked := h(okGroupSend(conv, 1, 10, 1, 2, 3))
	partial := h(members, acked, x(history.Invoke, 20, 0), x(history.Info, 30, 0), x(history.Deliver, 31, 2))
	res := mustCheck(t, partial, Options{})
	if !sameVerdicts(res, []Verdict{Gap}) || res.Counts[UnknownDelivered] != 1 || res.Examples[Gap][0].Recipient != 3 {
		t.Fatalf("partial: got %v: %s %v", failures(res), res.Summary(), res.Examples)
	}
	absent := h(members, acked, x(history.Invoke, 20, 0), x(history.Info, 30, 0))
	if res := mustCheck(t, absent, Options{}); !res.Passed || res.Counts[UnknownAbsent] != 1 {
		t.Fatalf("absent: %s", res.Summary())
	}
}

// okGroupSend is an acked group send from user 1 (ordinal ord) delivered to every member.
func okGroupSend(conv contract.ConversationID, ord uint64, atMs int64, members ...contract.UserID) []history.Event {
	e := history.Event{Lane: history.Frame, Sender: 1, Ordinal: ord, Conversation: conv}
	out := []history.Event{e, e}
	out[0].Kind, out[0].AtUs = history.Invoke, atMs*1000
	out[1].Kind, out[1].AtUs = history.Ok, (atMs+1)*1000
	out[1].MessageID, out[1].ConvSeq = contract.MessageID{Lo: 100 + ord}, 1+ord*10
	for _, m := range members {
		d := out[1]
		d.Kind, d.AtUs, d.Recipient = history.Deliver, (atMs+2)*1000, m
		out = append(out, d)
	}
	return out
}
