package check

import (
	"testing"

	"github.com/qim-dev/qim/chaos/history"
	"github.com/qim-dev/qim/contract"
)

// synthetic builds a clean two-lane history shaped like a recorded run: per pair index one
// frame-lane conversation (mailbox seqs, the sender's own copies, a durable-history read that
// also holds one foreign record from before the run, one late ack after an info) and one
// SDK-lane conversation (deliveries after the SDK's dedup, App). Both users of a pair send
// perSender messages to each other, alternating, one send every 20 ms; every send is pushed,
// acked and pulled before the next one is invoked.
func synthetic(pairs, perSender int) []history.Event {
	g := &synth{mseq: make(map[contract.UserID]uint64)}
	for p := range pairs {
		g.conversation(history.Frame, p, perSender)
		g.conversation(history.SDK, p, perSender)
	}
	for i := range g.stored {
		g.stored[i].AtUs = g.lastUs + 1_000_000 // read once the settle wait is over
	}
	return append(g.ev, g.stored...)
}

type synth struct {
	ev, stored []history.Event
	mid        uint64
	mseq       map[contract.UserID]uint64
	lastUs     int64
}

const synthStartUs = 1_767_225_600_000_000 // 2026-01-01, a plausible Unix µs

func (g *synth) conversation(lane history.Lane, p, perSender int) {
	a := contract.UserID(4*p + 2*int(lane) - 1) // frame: 4p+1, 4p+2; SDK: 4p+3, 4p+4
	b := a + 1
	conv := contract.ConversationID{Hi: uint64(lane), Lo: uint64(p + 1)}
	base := synthStartUs + int64(p)*1000 + int64(lane)*300
	seq := uint64(0)
	if lane == history.Frame {
		seq++ // seq 1 is a message from before the run
		g.mid++
		g.stored = append(g.stored, history.Event{Kind: history.Stored, Lane: lane, Conversation: conv,
			ConvSeq: seq, MessageID: contract.MessageID{Hi: uint64(base) - 1, Lo: g.mid}, Foreign: true})
	}
	for j := range 2 * perSender {
		from, to := a, b
		if j%2 == 1 {
			from, to = b, a
		}
		seq++
		g.mid++
		t := base + int64(j)*20_000
		send := history.Event{Lane: lane, Sender: from, Ordinal: uint64(j / 2), Recipient: to}
		placed := send
		placed.MessageID, placed.Conversation, placed.ConvSeq = contract.MessageID{Hi: uint64(t), Lo: g.mid}, conv, seq
		g.add(send, history.Invoke, t)
		if lane == history.Frame && j == 3 {
			g.add(send, history.Info, t+2_500) // a timeout the late ack below overrides
		}
		g.add(placed, history.Push, t+2_000)
		g.add(placed, history.Ok, t+3_000)
		g.deliver(placed, to, t+5_000)
		if lane == history.Frame {
			g.deliver(placed, from, t+6_000) // the sender's own copy
			st := placed
			st.Kind, st.Recipient = history.Stored, 0
			g.stored = append(g.stored, st)
		}
	}
}

func (g *synth) add(e history.Event, k history.Kind, atUs int64) {
	e.Kind, e.AtUs = k, atUs
	g.ev = append(g.ev, e)
	g.lastUs = max(g.lastUs, atUs)
}

func (g *synth) deliver(e history.Event, to contract.UserID, atUs int64) {
	e.Recipient = to
	if e.Lane == history.Frame {
		g.mseq[to]++
		e.MailboxSeq = 1<<20 + g.mseq[to]
	} else {
		e.App = true
	}
	g.add(e, history.Deliver, atUs)
}

func TestSyntheticHistoryPasses(t *testing.T) {
	for _, size := range [][2]int{{1, 1}, {3, 20}, {100, 100}} {
		events := synthetic(size[0], size[1])
		res := mustCheck(t, events, Options{})
		sends := 4 * size[0] * size[1]
		if !res.Passed || res.Acked != sends || res.Delivered != sends {
			t.Fatalf("synthetic(%d, %d), %d events: %s; examples %v", size[0], size[1], len(events), res.Summary(), res.Examples)
		}
	}
}

// BenchmarkCheck judges a synthetic history of about 220k events.
func BenchmarkCheck(b *testing.B) {
	events := synthetic(100, 100)
	b.ReportMetric(float64(len(events)), "events")
	for b.Loop() {
		if _, err := Check(events, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
