package room

import (
	"slices"
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
)

// fill appends events with room_seq first, first+1, … at t0 + each offset, 10 bytes each.
func fill(r *ring, first uint64, offsets ...time.Duration) {
	for i, off := range offsets {
		seq := first + uint64(i)
		ev := &qimv1.RoomEvent{RoomSeq: seq, SenderUserId: 7}
		r.push(bufferedEvent{ev: ev, cmid: contract.ClientMessageID{Lo: seq}, at: t0.Add(off), size: 10}, t0.Add(off))
	}
}

func ringSeqs(r *ring) []uint64 {
	out := []uint64{}
	for i := range r.len() {
		out = append(out, r.at(i).ev.GetRoomSeq())
	}
	return out
}

func offsets(n int, step time.Duration) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Duration(i) * step
	}
	return out
}

func TestRingEviction(t *testing.T) {
	for _, c := range []struct {
		name   string
		max    int
		age    time.Duration
		at     []time.Duration // append times, room_seq 1, 2, …
		readAt time.Duration
		want   []uint64
	}{
		{"under both bounds", 4, 10 * time.Second, offsets(3, time.Second), 3 * time.Second, []uint64{1, 2, 3}},
		{"count evicts the oldest", 3, time.Hour, offsets(5, time.Second), 5 * time.Second, []uint64{3, 4, 5}},
		{"count of one", 1, time.Hour, offsets(3, 0), 0, []uint64{3}},
		{"age evicts on read, the boundary is kept", 10, 10 * time.Second,
			[]time.Duration{0, 5 * time.Second, 11 * time.Second}, 15 * time.Second, []uint64{2, 3}},
		{"age evicts on append", 10, 10 * time.Second, []time.Duration{0, 20 * time.Second}, 20 * time.Second, []uint64{2}},
		{"everything aged out", 10, 10 * time.Second, offsets(2, time.Second), 30 * time.Second, []uint64{}},
		{"wraps around", 3, time.Hour, offsets(8, time.Second), 8 * time.Second, []uint64{6, 7, 8}},
		{"grows past its first slice", 20, time.Hour, offsets(12, time.Second), 12 * time.Second, seqRange(1, 12)},
		{"grows while wrapped", 12, time.Hour, offsets(30, time.Second), 30 * time.Second, seqRange(19, 30)},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRing(c.max, c.age)
			fill(r, 1, c.at...)
			r.evict(t0.Add(c.readAt))
			if got := ringSeqs(r); !slices.Equal(got, c.want) {
				t.Fatalf("buffered %v, want %v", got, c.want)
			}
			if len(r.ids) != r.len() {
				t.Fatalf("%d idempotency keys for %d events", len(r.ids), r.len())
			}
			for seq := uint64(1); seq <= uint64(len(c.at)); seq++ {
				e, ok := r.lookup(idemKey{7, contract.ClientMessageID{Lo: seq}}, t0.Add(c.readAt))
				if want := slices.Contains(c.want, seq); ok != want || (ok && e.ev.GetRoomSeq() != seq) {
					t.Fatalf("lookup of seq %d: found %v (%v), want found %v", seq, ok, e, want)
				}
			}
		})
	}
}

func TestRingReplay(t *testing.T) {
	const roomBase = 100 // the room's RoomSeqBase; its latest room_seq is roomBase + events
	for _, c := range []struct {
		name          string
		events        int           // buffered events roomBase+1 … roomBase+events, appended at t0
		readAt        time.Duration // with an age of one minute
		from          uint64
		budget        int
		want          []uint64
		wantTruncated bool
	}{
		{"fresh room, from its base", 0, 0, roomBase, contract.RoomReplayMaxBytes, nil, true},
		{"fresh room, from before its base", 0, 0, 3, contract.RoomReplayMaxBytes, nil, true},
		{"fresh room, from after its base", 0, 0, roomBase + 1, contract.RoomReplayMaxBytes, nil, false},
		{"from above latest", 5, 0, roomBase + 6, contract.RoomReplayMaxBytes, nil, false},
		{"from latest", 5, 0, roomBase + 5, contract.RoomReplayMaxBytes, []uint64{105}, false},
		{"from inside", 5, 0, roomBase + 3, contract.RoomReplayMaxBytes, []uint64{103, 104, 105}, false},
		{"from the oldest", 5, 0, roomBase + 1, contract.RoomReplayMaxBytes, seqRange(101, 105), false},
		{"from before the oldest", 5, 0, roomBase - 1, contract.RoomReplayMaxBytes, seqRange(101, 105), true},
		{"from zero", 5, 0, 0, contract.RoomReplayMaxBytes, seqRange(101, 105), true},
		{"buffer emptied by age", 5, 2 * time.Minute, roomBase + 3, contract.RoomReplayMaxBytes, nil, true},
		{"cut by the byte budget keeps the newest", 5, 0, roomBase + 1, 25, []uint64{104, 105}, true},
		{"byte budget exactly met", 5, 0, roomBase + 1, 50, seqRange(101, 105), false},
		{"budget below one event", 5, 0, roomBase + 5, 9, nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRing(contract.RoomBufferEventsDefault, time.Minute)
			fill(r, roomBase+1, make([]time.Duration, c.events)...)
			got, truncated := r.replay(c.from, roomBase+uint64(c.events), c.budget, t0.Add(c.readAt))
			if want := append([]uint64{}, c.want...); !slices.Equal(seqs(got), want) {
				t.Fatalf("replay %v, want %v", seqs(got), want)
			}
			if truncated != c.wantTruncated {
				t.Fatalf("truncated %v, want %v", truncated, c.wantTruncated)
			}
		})
	}
}
