package loadgen

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/qim-dev/qim/chaos/history"
)

// historyView indexes a frame-lane history by send for the consistency checks.
type historyView struct {
	kinds   map[history.Kind]int
	invoked map[history.Key]history.Event
	ok      map[history.Key]history.Event
	deliver map[history.Key][]history.Event
	stored  map[history.Key]history.Event
	own     int // Deliver events of own copies (Recipient == Sender)
	foreign int // Stored records that are not load messages of the run
}

func viewHistory(evs []history.Event) *historyView {
	v := &historyView{kinds: map[history.Kind]int{}, invoked: map[history.Key]history.Event{},
		ok: map[history.Key]history.Event{}, deliver: map[history.Key][]history.Event{}, stored: map[history.Key]history.Event{}}
	for _, e := range evs {
		v.kinds[e.Kind]++
		switch e.Kind {
		case history.Invoke:
			v.invoked[e.Key()] = e
		case history.Ok:
			v.ok[e.Key()] = e
		case history.Deliver:
			v.deliver[e.Key()] = append(v.deliver[e.Key()], e)
			if e.Recipient == e.Sender {
				v.own++
			}
		case history.Stored:
			if e.Foreign {
				v.foreign++
			} else {
				v.stored[e.Key()] = e
			}
		}
	}
	return v
}

// checkHistory holds a frame-lane history against the run's report: one Invoke per SEND
// written (plus those whose write failed, which end as Info and are not counted as sent), one
// Ok per ACK, every Ok preceded by its Invoke, delivered to its recipient under
// its message id (the report says nothing is missing) and present in the stored conversation,
// own copies among the deliveries, and nothing delivered or stored that was never invoked.
func checkHistory(t *testing.T, rep *Report, evs []history.Event) *historyView {
	t.Helper()
	v := viewHistory(evs)
	c := rep.Counts
	if inv := int64(v.kinds[history.Invoke]); inv < c.Sent || inv > c.Sent+int64(v.kinds[history.Info]) || len(v.invoked) != int(inv) {
		t.Errorf("%d Invoke events (%d sends) for %d SENDs written", v.kinds[history.Invoke], len(v.invoked), c.Sent)
	}
	if int64(v.kinds[history.Ok]) != c.Acked || int64(len(v.ok)) != c.Acked {
		t.Errorf("%d Ok events (%d sends) for %d acked", v.kinds[history.Ok], len(v.ok), c.Acked)
	}
	if int64(v.kinds[history.Stored]) < c.Acked || v.foreign != 0 {
		t.Errorf("%d Stored events (%d foreign) for %d acked", v.kinds[history.Stored], v.foreign, c.Acked)
	}
	if v.own == 0 {
		t.Error("no own copy was delivered")
	}
	for k, ok := range v.ok {
		checkOk(t, v, k, ok)
	}
	for k := range v.deliver {
		if _, sent := v.invoked[k]; !sent {
			t.Errorf("%s delivered, never invoked", k)
		}
	}
	for k := range v.stored {
		if _, sent := v.invoked[k]; !sent {
			t.Errorf("%s stored, never invoked", k)
		}
	}
	return v
}

func checkOk(t *testing.T, v *historyView, k history.Key, ok history.Event) {
	t.Helper()
	if inv, found := v.invoked[k]; !found || inv.AtUs > ok.AtUs || inv.Recipient != ok.Recipient {
		t.Errorf("%s: Ok without an earlier Invoke to the same recipient (%+v)", k, inv)
	}
	delivered := false
	for _, d := range v.deliver[k] {
		if d.Recipient == ok.Recipient && d.MessageID == ok.MessageID && d.Conversation == ok.Conversation {
			delivered = true
		}
	}
	if !delivered {
		t.Errorf("%s: acked as %s, never delivered to %d under that id", k, ok.MessageID, ok.Recipient)
	}
	if s, found := v.stored[k]; !found || s.MessageID != ok.MessageID || s.ConvSeq != ok.ConvSeq || s.Conversation != ok.Conversation {
		t.Errorf("%s: acked at seq %d, stored as %+v", k, ok.ConvSeq, s)
	}
}

// TestHistoryAgainstFakeGateway: with History set, a run against a gateway that loses nothing
// records a history consistent with its report, read back from the stored conversations too.
func TestHistoryAgainstFakeGateway(t *testing.T) {
	gw := newFakeGateway(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rec := history.NewRecorder()
	cfg := fakeConfig(gw, 200, time.Second)
	cfg.History = rec
	rep, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := rep.Counts
	v := checkHistory(t, rep, rec.Events())
	t.Logf("sent %d acked %d delivered %d stored %d; events %v, own copies %d", c.Sent, c.Acked, c.Delivered, c.Stored, v.kinds, v.own)
	if c.Sent != 200 || c.Acked != 200 || c.Missing != 0 || c.Stored != 200 || c.StoredErrors != 0 || c.StoredIncomplete != 0 {
		t.Errorf("counts %+v", c)
	}
	if v.kinds[history.Push] != 200 || v.kinds[history.Fail]+v.kinds[history.Info] != 0 || !rep.Config.History {
		t.Errorf("events %v, config %+v", v.kinds, rep.Config)
	}
}

// TestNoHistoryRecordsNothing: without a recorder the run reads no stored history.
func TestNoHistoryRecordsNothing(t *testing.T) {
	gw := newFakeGateway(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := Run(ctx, fakeConfig(gw, 100, 500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if c := rep.Counts; c.Acked != 50 || c.Stored != 0 || c.Missing != 0 || rep.Config.History {
		t.Errorf("counts %+v", c)
	}
}

// TestStoredReadErrorsAreRunErrors: a PULL_HISTORY answered by ERROR is a noted run error and
// is retried on the pair's other connection; a pair whose history stays unreadable is counted
// as incomplete, never skipped in silence.
func TestStoredReadErrorsAreRunErrors(t *testing.T) {
	for _, tc := range []struct {
		name       string
		refusals   int64
		incomplete int64
	}{
		{"one refusal is retried", 1, 0},
		{"a history that stays unreadable", 1000, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gw := newFakeGateway(t)
			gw.refuseHistory.Store(tc.refusals)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cfg := fakeConfig(gw, 60, 500*time.Millisecond)
			cfg.History = history.NewRecorder()
			rep, err := Run(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			c := rep.Counts
			wantErrors := min(tc.refusals, 3*storedAttempts)
			if c.StoredErrors != wantErrors || c.StoredIncomplete != tc.incomplete || rep.ErrorCount != wantErrors {
				t.Errorf("stored errors %d (want %d), incomplete %d (want %d), %d run errors %q", c.StoredErrors, wantErrors,
					c.StoredIncomplete, tc.incomplete, rep.ErrorCount, rep.Errors)
			}
			if len(rep.Errors) == 0 || !strings.Contains(rep.Errors[0], "PULL_HISTORY") || !strings.Contains(rep.Errors[0], "UNAVAILABLE") {
				t.Errorf("errors %q", rep.Errors)
			}
			if tc.incomplete == 0 && c.Stored != c.Acked {
				t.Errorf("stored %d of %d acked after a retry", c.Stored, c.Acked)
			}
		})
	}
}
