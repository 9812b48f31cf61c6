package sdklane

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/qim-dev/qim/contract"
)

// Body layout of every lane message (big-endian). It is loadgen's frame-lane layout, so one
// parser reads both lanes' bodies in a capture:
//
//	offset size field
//	0      8    run id     the load run's id; a message of another run is stray
//	8      8    sent at    sender wall clock when Send was called, Unix µs (informational)
//	16     4    sender     index of the sending client in the lane
//	20     4    reserved   zero
//	24     8    ordinal    per-sender counter, 0, 1, 2, ...
const bodyBytes = 32

type body struct {
	run     uint64
	sentUs  int64
	sender  uint32
	ordinal uint64
}

func (b body) encode() []byte {
	p := make([]byte, bodyBytes) // the SDK keeps the slice in its pending row: one per message
	binary.BigEndian.PutUint64(p[0:], b.run)
	binary.BigEndian.PutUint64(p[8:], uint64(b.sentUs))
	binary.BigEndian.PutUint32(p[16:], b.sender)
	binary.BigEndian.PutUint64(p[24:], b.ordinal)
	return p
}

func parseBody(p []byte) (body, bool) {
	if len(p) != bodyBytes {
		return body{}, false
	}
	return body{run: binary.BigEndian.Uint64(p[0:]), sentUs: int64(binary.BigEndian.Uint64(p[8:])),
		sender: binary.BigEndian.Uint32(p[16:]), ordinal: binary.BigEndian.Uint64(p[24:])}, true
}

// flowLog is one direction of a pair (sender → receiver): what the sender's SDK reported about
// its sends and what the receiver's SDK surfaced as MessagesAdded.
//
// Invariants: facts are recorded as they arrive, in any order — a Committed event can precede
// the return of the Send that created it, and a receipt can precede both — and are joined only
// by verify, after the lane stopped; an ordinal counts as received once per MessagesAdded entry,
// so a repeat that the SDK's dedup let through shows up as a repeat instead of vanishing.
//
// How: the sender goroutine records client_message_id → ordinal, the sender's event pump the
// outcomes by client_message_id, the receiver's event pump the message ids per ordinal; one
// mutex guards all three (a pair sends a few messages per second).
//
// Rejected alternative: tracking a per-ordinal state machine on the fly. It would need the SDK's
// event order to be what this code assumes, and the lane exists to test the SDK, not to trust
// it; a join at the end makes no ordering assumption.
type flowLog struct {
	mu        sync.Mutex
	sent      map[contract.ClientMessageID]uint64 // Send returned this id for this ordinal
	sendErrs  int64                               // Send calls that returned an error
	committed map[contract.ClientMessageID]struct{}
	failed    map[contract.ClientMessageID]contract.ErrorCode
	received  map[uint64][]contract.MessageID // ordinal → message ids of every MessagesAdded entry
	stray     int64                           // peer messages that are not a lane body of this run
}

func newFlowLog() *flowLog {
	return &flowLog{sent: map[contract.ClientMessageID]uint64{}, committed: map[contract.ClientMessageID]struct{}{},
		failed: map[contract.ClientMessageID]contract.ErrorCode{}, received: map[uint64][]contract.MessageID{}}
}

func (f *flowLog) recordSend(id contract.ClientMessageID, ordinal uint64, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		f.sendErrs++
		return
	}
	f.sent[id] = ordinal
}

func (f *flowLog) recordCommitted(id contract.ClientMessageID) {
	f.mu.Lock()
	f.committed[id] = struct{}{}
	f.mu.Unlock()
}

func (f *flowLog) recordFailed(id contract.ClientMessageID, code contract.ErrorCode) {
	f.mu.Lock()
	f.failed[id] = code
	f.mu.Unlock()
}

func (f *flowLog) recordReceived(ordinal uint64, id contract.MessageID) {
	f.mu.Lock()
	f.received[ordinal] = append(f.received[ordinal], id)
	f.mu.Unlock()
}

func (f *flowLog) recordStray() {
	f.mu.Lock()
	f.stray++
	f.mu.Unlock()
}

// flowCounts is the verdict of one direction.
type flowCounts struct {
	Sent      int64 // Send returned a client_message_id
	Committed int64 // of those, Committed
	Failed    int64 // of those, Failed, plus Send calls that returned an error
	Pending   int64 // sent, neither Committed nor Failed at the end
	Received  int64 // distinct sent ordinals surfaced at the receiver
	Missing   int64 // sent (not Failed) ordinals never surfaced at the receiver
	Repeated  int64 // MessagesAdded entries beyond the first per ordinal (same or other message_id)
	DoubleIDs int64 // ordinals surfaced under more than one message_id (a double commit)
	Stray     int64 // receipts of ordinals never sent, and peer messages that are not lane bodies
	// FirstMissing and FirstRepeated name a few ordinals for the detail (ascending).
	FirstMissing, FirstRepeated []uint64
}

const maxNamed = 5

// ok reports whether the direction is clean: something was sent, every send committed, and
// every ordinal surfaced exactly once.
func (c flowCounts) ok() bool {
	return c.Sent > 0 && c.Committed == c.Sent && c.Failed == 0 && c.Pending == 0 && c.Missing == 0 &&
		c.Repeated == 0 && c.Stray == 0
}

// complete reports whether waiting longer cannot change the verdict: every send has an outcome
// and every committed ordinal surfaced.
func (c flowCounts) complete() bool { return c.Pending == 0 && c.Missing == 0 }

// verify joins the recorded facts (see flowLog).
func (f *flowLog) verify() flowCounts {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := flowCounts{Sent: int64(len(f.sent)), Failed: f.sendErrs, Stray: f.stray}
	sentOrd := make(map[uint64]bool, len(f.sent)) // ordinal → its send failed
	for id, ord := range f.sent {
		_, committed := f.committed[id]
		_, failed := f.failed[id]
		switch {
		case committed:
			c.Committed++
		case failed:
			c.Failed++
		default:
			c.Pending++
		}
		sentOrd[ord] = failed && !committed
	}
	for ord, ids := range f.received {
		if _, ok := sentOrd[ord]; !ok {
			c.Stray += int64(len(ids))
			continue
		}
		c.Received++
		if len(ids) > 1 {
			c.Repeated += int64(len(ids) - 1)
			c.FirstRepeated = append(c.FirstRepeated, ord)
			if slices.ContainsFunc(ids[1:], func(id contract.MessageID) bool { return id != ids[0] }) {
				c.DoubleIDs++
			}
		}
	}
	for ord, failed := range sentOrd {
		if _, ok := f.received[ord]; !ok && !failed {
			c.Missing++
			c.FirstMissing = append(c.FirstMissing, ord)
		}
	}
	c.FirstMissing, c.FirstRepeated = firstFew(c.FirstMissing), firstFew(c.FirstRepeated)
	return c
}

func firstFew(s []uint64) []uint64 {
	slices.Sort(s)
	return s[:min(len(s), maxNamed)]
}

// describe is one failing direction in a line, for the lane's detail (no bodies).
func (c flowCounts) describe(from, to int) string {
	var parts []string
	add := func(n int64, what string) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, what))
		}
	}
	if c.Sent == 0 {
		parts = append(parts, "nothing sent")
	}
	add(c.Failed, "failed")
	add(c.Pending, "never committed")
	if c.Missing > 0 {
		parts = append(parts, fmt.Sprintf("%d missing (ordinals %v)", c.Missing, c.FirstMissing))
	}
	if c.Repeated > 0 {
		parts = append(parts, fmt.Sprintf("%d repeated (ordinals %v, %d under another message_id)", c.Repeated, c.FirstRepeated, c.DoubleIDs))
	}
	add(c.Stray, "stray")
	return fmt.Sprintf("client %d→%d: %s", from, to, strings.Join(parts, ", "))
}
