package check

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/qim-dev/qim/chaos/history"
	"github.com/qim-dev/qim/contract"
)

// mutations are the faults the checker must see when they are planted in a clean history.
// want must appear in any history (a recorded run's too); alsoSynthetic are the side effects
// the same fault has in synthetic(), where the exact set is known.
var mutations = []struct {
	kind          string
	want          []Verdict
	alsoSynthetic []Verdict
}{
	{kind: "drop-delivery", want: []Verdict{Lost}},
	{kind: "double-commit", want: []Verdict{Duplicate}},
	// The changed record also names a message id whose own copy nobody got.
	{kind: "reuse-stored-id", want: []Verdict{Reused, Lost}, alsoSynthetic: []Verdict{Gap}},
	// Swapped seqs also put each message id at two seqs.
	{kind: "swap-seqs", want: []Verdict{Order}},
	{kind: "drop-own-copy", want: []Verdict{Gap}},
	{kind: "delay-recipient", want: []Verdict{Stalled}},
}

// mutate plants one fault of kind into a copy of ev, at the first event that suits it, and
// reports false when no event does. It works on any history, a recorded run's included.
func mutate(kind string, ev []history.Event) ([]history.Event, bool) {
	ev = slices.Clone(ev)
	switch kind {
	case "drop-delivery": // an acked send's only delivery to its recipient: LOST
		return dropAt(ev, firstLoneDelivery(ev))
	case "double-commit": // the recipient gets the send again under a new message id: DUPLICATE
		return doubleCommit(ev)
	case "reuse-stored-id": // a durable record names another message id: REUSED and LOST
		i := slices.IndexFunc(ev, func(e history.Event) bool { return e.Kind == history.Stored && !e.Foreign })
		if i < 0 {
			return nil, false
		}
		ev[i].MessageID = freshMid(ev)
		return ev, true
	case "swap-seqs": // a mailbox places a message before one acknowledged before it was sent: ORDER
		return swapSeqs(ev)
	case "drop-own-copy": // the sender never gets its own copy of a stored message: GAP
		return dropOwnCopy(ev)
	case "delay-recipient": // one recipient's last deliveries come 30 s late: STALLED
		return delayRecipient(ev, 30_000_000)
	}
	return nil, false
}

// acked is the set of sends answered ok.
func acked(ev []history.Event) map[history.Key]bool {
	out := make(map[history.Key]bool)
	for i := range ev {
		if ev[i].Kind == history.Ok {
			out[ev[i].Key()] = true
		}
	}
	return out
}

// intended reports a delivery of an acked send to its recipient (not an own copy).
func intended(e *history.Event, ok map[history.Key]bool) bool {
	return e.Kind == history.Deliver && e.Recipient != e.Sender && ok[e.Key()]
}

// firstLoneDelivery is the first delivery of an acked send that its recipient got only once.
func firstLoneDelivery(ev []history.Event) int {
	ok := acked(ev)
	count := make(map[boxKey]int)
	for i := range ev {
		if intended(&ev[i], ok) {
			count[boxKey{ev[i].Recipient, ev[i].Key()}]++
		}
	}
	return slices.IndexFunc(ev, func(e history.Event) bool {
		return intended(&e, ok) && count[boxKey{e.Recipient, e.Key()}] == 1
	})
}

func dropAt(ev []history.Event, i int) ([]history.Event, bool) {
	if i < 0 {
		return nil, false
	}
	return slices.Delete(ev, i, i+1), true
}

// doubleCommit delivers the first acked send again as a second message: a fresh id at the
// conversation's next seq and, on the frame lane, the recipient's next mailbox_seq.
func doubleCommit(ev []history.Event) ([]history.Event, bool) {
	ok := acked(ev)
	i := slices.IndexFunc(ev, func(e history.Event) bool { return intended(&e, ok) })
	if i < 0 {
		return nil, false
	}
	d := ev[i]
	d.MessageID, d.AtUs = freshMid(ev), d.AtUs+1
	for j := range ev {
		if ev[j].Conversation == d.Conversation {
			d.ConvSeq = max(d.ConvSeq, ev[j].ConvSeq+1)
		}
		if ev[j].Kind == history.Deliver && ev[j].Recipient == d.Recipient && d.MailboxSeq != 0 {
			d.MailboxSeq = max(d.MailboxSeq, ev[j].MailboxSeq+1)
		}
	}
	return append(ev, d), true
}

// swapSeqs swaps the seqs of the first two messages one recipient first got from one
// conversation with mailbox seqs.
func swapSeqs(ev []history.Event) ([]history.Event, bool) {
	okAt, invAt := make(map[history.Key]int64), make(map[history.Key]int64)
	for i := range ev {
		switch ev[i].Kind {
		case history.Ok:
			okAt[ev[i].Key()] = ev[i].AtUs
		case history.Invoke:
			invAt[ev[i].Key()] = ev[i].AtUs
		}
	}
	first := make(map[recvMid]bool)
	a := -1
	for i := range ev {
		e := &ev[i]
		if e.Kind != history.Deliver || e.MailboxSeq == 0 || e.ConvSeq == 0 || first[recvMid{e.Recipient, e.MessageID}] {
			continue
		}
		first[recvMid{e.Recipient, e.MessageID}] = true
		switch {
		case a < 0:
			a = i
		case e.Recipient == ev[a].Recipient && e.Conversation == ev[a].Conversation && e.MailboxSeq != ev[a].MailboxSeq:
			ka, kb := ev[a].Key(), e.Key()
			if at, ok := okAt[ka]; ok && at < invAt[kb] { // real-time order: a before b
				e.MailboxSeq, ev[a].MailboxSeq = ev[a].MailboxSeq, e.MailboxSeq
				return ev, true
			}
		}
	}
	return nil, false
}

// dropOwnCopy removes every own copy of the first stored message the sender got a copy of.
func dropOwnCopy(ev []history.Event) ([]history.Event, bool) {
	stored := make(map[contract.MessageID]bool)
	for i := range ev {
		if ev[i].Kind == history.Stored && !ev[i].Foreign {
			stored[ev[i].MessageID] = true
		}
	}
	own := func(e history.Event) bool {
		return e.Kind == history.Deliver && e.Lane == history.Frame && e.Recipient == e.Sender && stored[e.MessageID]
	}
	i := slices.IndexFunc(ev, own)
	if i < 0 {
		return nil, false
	}
	victim := ev[i]
	return slices.DeleteFunc(ev, func(e history.Event) bool {
		return own(e) && e.MessageID == victim.MessageID && e.Sender == victim.Sender
	}), true
}

// delayRecipient moves every delivery to one recipient, from its last delivery of an acked
// send on, byUs later: the recipient of the first acked delivery.
func delayRecipient(ev []history.Event, byUs int64) ([]history.Event, bool) {
	ok := acked(ev)
	i := slices.IndexFunc(ev, func(e history.Event) bool { return intended(&e, ok) })
	if i < 0 {
		return nil, false
	}
	r, from := ev[i].Recipient, ev[i].AtUs
	for j := range ev {
		if intended(&ev[j], ok) && ev[j].Recipient == r {
			from = max(from, ev[j].AtUs)
		}
	}
	for j := range ev {
		if ev[j].Kind == history.Deliver && ev[j].Recipient == r && ev[j].AtUs >= from {
			ev[j].AtUs += byUs
		}
	}
	return ev, true
}

// freshMid is a message id above every id in ev.
func freshMid(ev []history.Event) contract.MessageID {
	var top contract.MessageID
	for i := range ev {
		if ev[i].MessageID.Compare(top) > 0 {
			top = ev[i].MessageID
		}
	}
	return contract.MessageID{Hi: top.Hi + 1}
}

// TestMutationsAreFound plants each fault in a clean synthetic history: the clean one passes,
// every mutant fails with exactly the verdicts its fault explains.
func TestMutationsAreFound(t *testing.T) {
	clean := synthetic(4, 20)
	if res := mustCheck(t, clean, Options{}); !res.Passed {
		t.Fatalf("clean history: %s", res.Summary())
	}
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
	if _, ok := mutate("no-such-mutation", clean); ok {
		t.Fatal("unknown mutation applied")
	}
}

// TestMutationsOfARealRunAreFound is the checker-is-not-blind test over a real run: the history
// of a chaos cell (writer-kill-after-record: 40 connections at 100 msg/s on both lanes, the
// writer SIGKILLed after RECORDED 8 s in and restarted, 11 sends of unknown outcome and two
// messages finished late by the recovery loop). It passes as recorded; each planted fault fails
// it with that fault's verdict.
func TestMutationsOfARealRunAreFound(t *testing.T) {
	real, err := history.ReadFile(filepath.Join("testdata", "writer-kill-after-record.log.zst"))
	if err != nil {
		t.Fatal(err)
	}
	if res := mustCheck(t, real, Options{}); !res.Passed || res.Acked < 2000 || res.Counts[LateCommit] == 0 {
		t.Fatalf("the recorded run must pass with its late commits: %s (late commits %d)", res.Summary(), res.Counts[LateCommit])
	}
	for _, mu := range mutations {
		t.Run(mu.kind, func(t *testing.T) {
			mutant, ok := mutate(mu.kind, real)
			if !ok {
				t.Fatal("no event to mutate")
			}
			res := mustCheck(t, mutant, Options{StallAfter: DefaultStallAfter})
			got := failures(res)
			for _, v := range mu.want {
				if res.Counts[v] == 0 {
					t.Errorf("planted %s: no %s (got %v): %s", mu.kind, v, got, res.Summary())
				}
			}
			if res.Passed {
				t.Errorf("planted %s: passed", mu.kind)
			}
		})
	}
}
