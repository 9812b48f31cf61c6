package history

import (
	"bytes"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/qim-dev/qim/contract"
)

func sample() []Event {
	return []Event{
		{Kind: Invoke, AtUs: 10, Lane: Frame, Sender: 7, Ordinal: 0, Recipient: 8},
		{Kind: Ok, AtUs: 20, Lane: Frame, Sender: 7, Ordinal: 0, Recipient: 8, MessageID: contract.MessageID{Hi: 1, Lo: 2},
			Conversation: contract.ConversationID{Hi: 3, Lo: 4}, ConvSeq: 1},
		{Kind: Info, AtUs: 25, Lane: SDK, Sender: 9, Ordinal: 3, Recipient: 10, Code: contract.ErrCodeUnavailable},
		{Kind: Deliver, AtUs: 30, Lane: SDK, Sender: 7, Ordinal: 0, Recipient: 8, MessageID: contract.MessageID{Hi: 1, Lo: 2},
			Conversation: contract.ConversationID{Hi: 3, Lo: 4}, ConvSeq: 1, MailboxSeq: 99, App: true},
		{Kind: Stored, AtUs: 40, Lane: Frame, Conversation: contract.ConversationID{Hi: 3, Lo: 4}, ConvSeq: 2, Foreign: true},
	}
}

func TestLogRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	if err := Encode(&buf, sample()); err != nil {
		t.Fatal(err)
	}
	got, err := Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, sample()) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, sample())
	}
	path := filepath.Join(t.TempDir(), "h.log.zst")
	if err := WriteFile(path, sample()); err != nil {
		t.Fatal(err)
	}
	if got, err = ReadFile(path); err != nil || !reflect.DeepEqual(got, sample()) {
		t.Fatalf("file round trip: %v %+v", err, got)
	}
}

func TestDecodeRejectsMalformedLines(t *testing.T) {
	for _, line := range []string{
		"Z 1 f 1 1 1 - - 0 0 0 -",
		"I 1 q 1 1 1 - - 0 0 0 -",
		"I 1 f 1 1 1 - -",
		"I x f 1 1 1 - - 0 0 0 -",
		"O 1 f 1 1 1 nothex - 0 0 0 -",
	} {
		if _, err := Decode(bytes.NewBufferString(line + "\n")); err == nil {
			t.Errorf("%q decoded", line)
		}
	}
}

func TestRecorderOrdersByTimeAndNilIsANoop(t *testing.T) {
	var nilRec *Recorder
	nilRec.Record(Event{Kind: Invoke})
	if nilRec.Len() != 0 || nilRec.Events() != nil {
		t.Fatal("nil recorder recorded")
	}
	r := NewRecorder()
	r.Record(Event{Kind: Ok, AtUs: 5})
	r.Record(Event{Kind: Invoke, AtUs: 1})
	r.Record(Event{Kind: Deliver, AtUs: 5})
	ev := r.Events()
	if ev[0].Kind != Invoke || ev[1].Kind != Ok || ev[2].Kind != Deliver {
		t.Fatalf("order %v", ev)
	}
}

// TestLogRoundTripGroup: a group's membership (one Group event per member) and a send addressed
// to the group's conversation (no recipient) survive the text form.
func TestLogRoundTripGroup(t *testing.T) {
	conv := contract.ConversationID{Hi: 2 << 60, Lo: 5}
	evs := []Event{
		{Kind: Group, AtUs: 1, Lane: Frame, Sender: 7, Recipient: 7, Conversation: conv},
		{Kind: Group, AtUs: 1, Lane: Frame, Sender: 7, Recipient: 8, Conversation: conv},
		{Kind: Invoke, AtUs: 2, Lane: Frame, Sender: 8, Ordinal: 0, Conversation: conv},
	}
	var buf bytes.Buffer
	if err := Encode(&buf, evs); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(buf.Bytes(), []byte("G 1 f 7 0 7 - "+conv.String())) {
		t.Fatalf("text form %q", buf.String())
	}
	got, err := Decode(&buf)
	if err != nil || !reflect.DeepEqual(got, evs) {
		t.Fatalf("round trip: %v\n got %+v\nwant %+v", err, got, evs)
	}
}
