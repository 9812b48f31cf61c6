package audit

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

const sceneShards = 8

// scene is a private Outbox and dispatch log, the dispatches written by a real fanout.
type scene struct {
	k                *kit
	outbox, dispatch string
	group            string
	shards           int
}

// newScene commits n messages and dispatches them with a real FanoutCoordinator, in two halves;
// mid, when set, runs between the halves (with the fanout stopped).
func newScene(k *kit, n int, mid func(s *scene)) *scene {
	k.t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	s := &scene{k: k, outbox: k.topic("outbox", 1), dispatch: k.topic("dispatch", sceneShards),
		group: "qim-test-audit-" + hex.EncodeToString(b[:]), shards: sceneShards}
	k.messages(s.outbox, n/2)
	k.fanout(s.outbox, s.dispatch, sceneShards, s.group, int64(n/2))
	if mid != nil {
		mid(s)
	}
	k.messages(s.outbox, n-n/2)
	k.fanout(s.outbox, s.dispatch, sceneShards, s.group, s.outboxEnd())
	return s
}

func (s *scene) outboxEnd() int64 {
	s.k.t.Helper()
	ends, err := listed(s.k.adm.ListEndOffsets(s.k.ctx, s.outbox))
	if err != nil {
		s.k.t.Fatal(err)
	}
	return ends[0]
}

func (s *scene) config() Config {
	n, _ := contract.NewShardCount(s.shards)
	return Config{Brokers: s.k.brokers, OutboxTopic: s.outbox, DispatchTopic: s.dispatch, Shards: n}
}

// skipOne commits a message whose two users share a shard (one dispatch) and moves the fanout's
// position past it, as a fanout that skipped a record would: a committed message never dispatched.
func (s *scene) skipOne() {
	k := s.k
	shards := s.config().Shards
	a := randUint(k.t)
	peer := a + 1
	for shards.UserShard(k.tenant, contract.UserID(peer)) != shards.UserShard(k.tenant, contract.UserID(a)) {
		peer++
	}
	k.commit(s.outbox, k.envelope(a, peer, time.Now().UnixMilli(), "skipped"))
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: s.outbox, Partition: 0, At: s.outboxEnd(), LeaderEpoch: -1})
	if _, err := k.adm.CommitOffsets(k.ctx, s.group, os); err != nil {
		k.t.Fatal(err)
	}
}

// replant produces a copy of r, changed by edit, to partition p of the scene's dispatch log.
func (s *scene) replant(r *kgo.Record, p int32, edit func(d *internalv1.GroupDispatch)) {
	d := decodeDispatch(s.k.t, r)
	if edit != nil {
		edit(d)
	}
	s.k.produce(&kgo.Record{Topic: s.dispatch, Partition: p, Key: d.GetDispatchId(), Value: encode(s.k.t, d)})
}

// The audit is not blind: each planted fault is counted, exactly once, under its own kind, and
// a replayed copy is counted as information only. Each case is audited with the default window
// and with 3-record windows (every partition then holds and releases many times, and replays
// reach closed windows), which must agree.
func TestAuditCountsEachPlantedKind(t *testing.T) {
	mid := func(r *kgo.Record) int32 { return r.Partition }
	cases := []struct {
		name   string
		mid    func(s *scene)
		plant  func(s *scene, r *kgo.Record)
		want   map[Kind]int64
		dups   int64
		detail string
	}{
		{name: "clean log"},
		{name: "replayed duplicate", plant: func(s *scene, r *kgo.Record) { s.replant(r, mid(r), nil) }, dups: 1},
		{name: "committed without dispatch", mid: (*scene).skipOne,
			want: map[Kind]int64{KindCommittedWithoutDispatch: 1}, detail: "no dispatch for shard"},
		{name: "dispatch without commit", plant: func(s *scene, r *kgo.Record) {
			s.replant(r, mid(r), func(d *internalv1.GroupDispatch) {
				other, _ := contract.NewMessageID(uint64(time.Now().UnixMilli()), 1<<20, 1, 9)
				ob, id := other.Bytes(), contract.NewDispatchID(other, d.GetShard()).Bytes()
				d.MessageId, d.DispatchId = ob[:], id[:]
			})
		}, want: map[Kind]int64{KindDispatchWithoutCommit: 1}, detail: "does not commit this message"},
		{name: "dispatch naming an offset past the Outbox end", plant: func(s *scene, r *kgo.Record) {
			s.replant(r, mid(r), func(d *internalv1.GroupDispatch) { d.SourceOffset = 1 << 40 })
		}, want: map[Kind]int64{KindDispatchWithoutCommit: 1}, detail: "the Outbox holds"},
		{name: "mismatched sender", plant: func(s *scene, r *kgo.Record) {
			s.replant(r, mid(r), func(d *internalv1.GroupDispatch) { d.SenderUserId++ })
		}, want: map[Kind]int64{KindMismatch: 1}, detail: "sender_user_id"},
		{name: "mismatched recipients", plant: func(s *scene, r *kgo.Record) {
			s.replant(r, mid(r), func(d *internalv1.GroupDispatch) { d.Recipients = append(d.Recipients, d.Recipients[0]+1) })
		}, want: map[Kind]int64{KindMismatch: 1}, detail: "recipients"},
		{name: "same dispatch_id, another digest", plant: func(s *scene, r *kgo.Record) {
			s.replant(r, mid(r), func(d *internalv1.GroupDispatch) { d.PayloadDigest[0] ^= 1 })
		}, want: map[Kind]int64{KindMismatch: 1}, detail: "payload_digest"},
		{name: "wrong partition", plant: func(s *scene, r *kgo.Record) { s.replant(r, (mid(r)+1)%sceneShards, nil) },
			want: map[Kind]int64{KindWrongPartition: 1}, detail: "on partition"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := newKit(t)
			s := newScene(k, 24, c.mid)
			if c.plant != nil {
				recs := k.dispatches(s.dispatch)
				c.plant(s, recs[len(recs)/2])
			}
			for _, window := range []int{0, 3} {
				cfg := s.config()
				cfg.Window = window
				res := k.audit(cfg, Range{})
				checkCounts(t, res, c.want, c.detail)
				if res.Counts.ReplayedDuplicates != c.dups || res.Counts.OutboxRecords != s.outboxEnd() {
					t.Fatalf("window %d: %d replays (want %d), %d Outbox records (want %d)", window,
						res.Counts.ReplayedDuplicates, c.dups, res.Counts.OutboxRecords, s.outboxEnd())
				}
			}
		})
	}
}

// checkCounts requires a complete result whose failure counts are exactly want (others zero),
// with an example naming detail for each failing kind.
func checkCounts(t *testing.T, res *Result, want map[Kind]int64, detail string) {
	t.Helper()
	if !res.Complete() {
		t.Fatalf("incomplete: %+v", res.Incomplete)
	}
	for k, n := range res.Failures() {
		if n != want[k] {
			t.Fatalf("%s = %d, want %d (counts %+v, examples %+v)", k, n, want[k], res.Counts, res.Examples)
		}
		if n > 0 && (len(res.Examples[k]) == 0 || !strings.Contains(res.Examples[k][0].Detail, detail)) {
			t.Fatalf("%s examples %+v, want one saying %q", k, res.Examples[k], detail)
		}
	}
	if res.Passed() != (len(want) == 0) {
		t.Fatalf("Passed() = %v with failures %v", res.Passed(), res.Failures())
	}
}
