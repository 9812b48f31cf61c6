package check

import (
	"testing"

	"github.com/qim-dev/qim/chaos/history"
	"github.com/qim-dev/qim/contract"
)

// Kind shorthands, so a table reads like the log's text form.
const (
	I = history.Invoke
	O = history.Ok
	F = history.Fail
	U = history.Info
	D = history.Deliver
	P = history.Push
	S = history.Stored
)

// m describes one event of a send for ev: by default a frame-lane send from user 1 to user 2
// in conversation 9. For a Deliver, to is who got it (to: 1 is the sender's own copy).
type m struct {
	ord            uint64
	from, to       contract.UserID
	mid, seq, mseq uint64 // message id (its Lo half), conversation seq, mailbox seq; 0 = unset
	lane           history.Lane
	app            bool
}

var conv9 = contract.ConversationID{Lo: 9}

// ev builds one event of kind k at atMs milliseconds.
func ev(k history.Kind, atMs int64, x m) history.Event {
	e := history.Event{Kind: k, AtUs: atMs * 1000, Lane: x.lane, Sender: x.from, Ordinal: x.ord,
		Recipient: x.to, ConvSeq: x.seq, MailboxSeq: x.mseq, App: x.app}
	if e.Lane == 0 {
		e.Lane = history.Frame
	}
	if e.Sender == 0 {
		e.Sender = 1
	}
	if e.Recipient == 0 && k != S {
		e.Recipient = 2
	}
	if x.mid != 0 {
		e.MessageID = contract.MessageID{Lo: x.mid}
	}
	if x.mid != 0 || x.seq != 0 {
		e.Conversation = conv9
	}
	return e
}

// okSend is a clean frame-lane send: invoked at atMs, acked 1 ms later as message 100+ord at
// seq ord, delivered to user 2 1 ms after that.
func okSend(ord uint64, atMs int64) []history.Event {
	x := m{ord: ord, mid: 100 + ord, seq: ord}
	return []history.Event{ev(I, atMs, m{ord: ord}), ev(O, atMs+1, x), ev(D, atMs+2, x)}
}

// h flattens events and slices of events into one history.
func h(parts ...any) []history.Event {
	var out []history.Event
	for _, p := range parts {
		switch v := p.(type) {
		case history.Event:
			out = append(out, v)
		case []history.Event:
			out = append(out, v...)
		default:
			panic("h: not an event")
		}
	}
	return out
}

// failures is the non-zero failure counts of res.
func failures(res *Result) map[Verdict]int {
	out := make(map[Verdict]int)
	for _, v := range Failures {
		if n := res.Counts[v]; n > 0 {
			out[v] = n
		}
	}
	return out
}

// mustCheck runs Check and fails the test on an options error.
func mustCheck(t testing.TB, events []history.Event, opt Options) *Result {
	t.Helper()
	res, err := Check(events, opt)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// sameVerdicts reports whether res has exactly the failure verdicts in want, counts ignored.
func sameVerdicts(res *Result, want []Verdict) bool {
	got := failures(res)
	if len(got) != len(want) {
		return false
	}
	for _, v := range want {
		if got[v] == 0 {
			return false
		}
	}
	return true
}

func sec(s float64) int64 { return int64(s * 1e6) }
