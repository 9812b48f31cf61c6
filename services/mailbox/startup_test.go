package mailbox

import (
	"errors"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/commitlog"
	"github.com/qim-dev/qim/services/mailbox/mailboxstore"
)

// wmKey is the shard watermark key (mailboxstore's layout), written here to simulate damage.
func wmKey(s uint32) string { return "qim:mbwm:{s" + strconv.FormatUint(uint64(s), 10) + "}" }

// deleteRecordsBefore moves the partition's log start to offset, as retention would.
func (e *env) deleteRecordsBefore(shard uint32, offset int64) {
	e.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.ep.kafka...))
	if err != nil {
		e.t.Fatal(err)
	}
	defer cl.Close()
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: contract.TopicDispatch, Partition: int32(shard), At: offset})
	res, err := kadm.NewClient(cl).DeleteRecords(e.ctx, os)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		e.t.Fatal(err)
	}
}

// A shard whose watermark and log do not line up refuses to start, by log offsets: a watermark
// past the log end (recreated topic), a log that starts after watermark + 1 (records deleted
// before they were materialized), no watermark and a log that does not start at 0. A topic with
// another partition count than the shard count refuses too.
func TestStartRefusals(t *testing.T) {
	e := newEnv(t)
	ahead := e.claimShard()
	if err := e.rdb.Set(e.ctx, wmKey(ahead), 5, 0).Err(); err != nil {
		t.Fatal(err)
	}
	trimmedNoWM := e.claimShard()
	u := e.user(trimmedNoWM)
	for i := 0; i < 2; i++ {
		_, ds := e.message(u, e.user(trimmedNoWM), nil)
		e.produce(ds...)
	}
	e.deleteRecordsBefore(trimmedNoWM, 1)
	gap := e.claimShard()
	v := e.user(gap)
	for i := 0; i < 3; i++ {
		_, ds := e.message(v, e.user(gap), nil)
		e.produce(ds...)
	}
	if err := e.rdb.Set(e.ctx, wmKey(gap), 0, 0).Err(); err != nil {
		t.Fatal(err)
	}
	e.deleteRecordsBefore(gap, 2)
	for _, s := range []uint32{ahead, trimmedNoWM, gap} {
		_, err := e.launch(e.config(s))
		var se *StartError
		var oe *commitlog.OffsetOutOfRangeError
		if !errors.As(err, &se) || se.Shard != s || !errors.As(err, &oe) {
			t.Errorf("shard %d: want a StartError with OffsetOutOfRangeError, got %v", s, err)
		}
	}
	cfg := e.config(0)
	cfg.ShardCount = int(e.shards) / 2
	var pe *commitlog.PartitionCountError
	if _, err := e.launch(cfg); !errors.As(err, &pe) {
		t.Errorf("shard count mismatch: want PartitionCountError, got %v", err)
	}
}

// The watermark CAS catches a mailbox Redis that went back (what an everysec AOF loses in a host
// crash): the node stops instead of writing past the hole, and the restart replays the records
// from the rolled-back watermark, converging onto the entries that survived.
func TestWatermarkRollbackFencesAndReplays(t *testing.T) {
	e := newEnv(t)
	s := e.claimShard()
	n := e.start(e.config(s))
	sender, peer := e.user(s), e.user(s)
	var offs []int64
	send := func() {
		_, ds := e.message(sender, peer, []byte("m"))
		offs = append(offs, e.produce(ds...)...)
	}
	for i := 0; i < 3; i++ {
		send()
	}
	e.waitWatermark(s, offs[2])
	if err := e.rdb.Set(e.ctx, wmKey(s), offs[0], 0).Err(); err != nil { // lost the last two writes
		t.Fatal(err)
	}
	send()
	err := n.stopWhenDone(t)
	var fe *mailboxstore.FencedError
	if !errors.As(err, &fe) || fe.Offset != offs[3] {
		t.Fatalf("Run returned %v, want a FencedError at offset %d", err, offs[3])
	}
	if v := counterValue(t, n.svc, "qim_mailbox_watermark_fenced_total", ""); v != 1 {
		t.Fatalf("fenced counter %v", v)
	}
	again := e.start(e.config(s))
	got := e.pull(again, peer, "d", 0).GetEntries()
	if len(got) != 4 {
		t.Fatalf("%d entries after the replay, want 4", len(got))
	}
	for i, ev := range got {
		if ev.GetMailboxSeq() != uint64(seqAt(t, offs[i])) {
			t.Fatalf("entry %d at %d, want offset %d", i, ev.GetMailboxSeq(), offs[i])
		}
	}
}
