package audit

import (
	"context"
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// window is the expected dispatches of the committed records [from, to).
type window struct {
	from, to int64
	exp      map[contract.DispatchID]*expected
	msgs     map[contract.MessageID]int64 // message_id → Outbox offset (first copy)
	closed   bool                         // its missing dispatches were counted
	reread   bool                         // re-read for late dispatches: its seen counts mean nothing
}

func newWindow(from, to int64) *window {
	return &window{from: from, to: to, exp: map[contract.DispatchID]*expected{}, msgs: map[contract.MessageID]int64{}}
}

func (w *window) holds(s int64) bool { return w != nil && s >= w.from && s < w.to }

// missingRef is a committed-without-dispatch dispatch remembered after its window closed.
type missingRef struct {
	offset int64
	shard  uint32
	msg    contract.MessageID
}

// joiner is the dispatch pass: a windowed merge of the Outbox with every dispatch partition,
// joined on the source_offset each dispatch carries (records.proto, GroupDispatch.source_offset).
//
// Invariants: a window is closed (its unseen expectations counted as committed without
// dispatch) only when every dispatch partition is finished or holds a record whose source lies
// at or past the window's end; every dispatch record is judged exactly once, against the
// expectations of the window holding its source; a late dispatch (its source's window already
// closed: a replayed batch) is judged against a kept recent window or a re-read of its Outbox
// records, and clears a loss counted at close if it is that dispatch's first copy.
//
// How: the Outbox is read one window at a time; each dispatch partition is read until it holds
// a record whose source is past the window (logReader pauses it), so all partitions advance
// through the Outbox together and nothing is read twice. Because the fanout plans in Outbox
// order and produces each partition in order (ADR-0017,
// docs/adr/0017-dispatch-producer-batch-and-idempotence.md), a partition holds back only its
// own future and late records are replays; were a first copy ever late, it would still clear
// the loss counted at close, so the order only decides the cost, not the verdict.
//
// Rejected: reading every dispatch into a map keyed by dispatch_id and then the Outbox (memory
// grows with the whole range: ~200 B per dispatch, gigabytes at tens of millions), and an
// external sort of both logs (disk, and a second copy of message metadata at rest).
type joiner struct {
	cfg     *Config
	b       *bounds
	res     *Result
	outbox  *logReader
	disp    *logReader
	cur     *window
	recent  []*window
	reread  *window
	missing map[contract.DispatchID]missingRef
	lost    int64 // committed-without-dispatch beyond cfg.MaxTracked (not remembered)
	env     internalv1.CommittedEnvelope
	d       internalv1.GroupDispatch
	fp      printer
	meter   *meter
}

// rereadChunk is how many Outbox records one re-read for late dispatches loads.
const rereadChunk = 1024

func (j *joiner) run(ctx context.Context) error {
	for from := j.b.from; from < j.b.to; {
		w := newWindow(from, min(from+int64(j.cfg.Window), j.b.to))
		if err := j.load(ctx, j.outbox, w, true); err != nil {
			return err
		}
		if err := j.drain(ctx, w); err != nil {
			return err
		}
		j.close(w)
		from = w.to
	}
	// Whatever is left in the partitions names sources past the range or is late.
	return j.drain(ctx, &window{from: j.b.to, to: math.MaxInt64})
}

func (j *joiner) drain(ctx context.Context, w *window) error {
	j.cur = w
	j.disp.release()
	return j.disp.run(ctx, func(p int32, r *kgo.Record) (bool, error) { return j.visit(ctx, p, r) })
}

// load reads the committed records of w from r (held at the first record past w).
func (j *joiner) load(ctx context.Context, r *logReader, w *window, report bool) error {
	r.release()
	return r.run(ctx, func(_ int32, rec *kgo.Record) (bool, error) {
		if rec.Offset >= w.to {
			return true, nil
		}
		j.meter.tick()
		j.addRecord(w, rec, report)
		return false, nil
	})
}

// addRecord derives one committed record's expectations into w. report is false on a re-read,
// whose records were counted (and any gap reported) when first read.
func (j *joiner) addRecord(w *window, rec *kgo.Record, report bool) {
	gap := func(reason string) {
		if report {
			j.res.gap(Gap{Topic: j.cfg.OutboxTopic, From: rec.Offset, To: rec.Offset + 1, Reason: reason})
		}
	}
	if report {
		j.res.Counts.OutboxRecords++
	}
	j.env.Reset()
	if err := proto.Unmarshal(rec.Value, &j.env); err != nil {
		gap(fmt.Sprintf("undecodable committed record: %v", err))
		return
	}
	mid, exps, err := derive(&j.env, rec.Offset, j.cfg.Shards, &j.fp)
	if err != nil {
		gap(err.Error())
		return
	}
	if first, dup := w.msgs[mid]; dup {
		if report {
			j.outboxDuplicate(w, mid, first, rec.Offset, exps)
		}
		return
	}
	w.msgs[mid] = rec.Offset
	for id, e := range exps {
		w.exp[id] = e
	}
	if report {
		j.res.Counts.ExpectedDispatches += int64(len(exps))
	}
}

// outboxDuplicate accounts a message committed twice in one window: harmless when both copies
// plan the same dispatches (the first copy's expectations stand), a mismatch otherwise.
func (j *joiner) outboxDuplicate(w *window, mid contract.MessageID, first, off int64, exps map[contract.DispatchID]*expected) {
	j.res.Counts.OutboxDuplicates++
	for id, e := range exps {
		if old := w.exp[id]; old == nil || old.recips != e.recips || old.content != e.content ||
			old.conv != e.conv || old.seq != e.seq || old.sender != e.sender {
			j.res.Counts.Mismatch++
			j.res.example(KindMismatch, Example{DispatchID: contract.U128(id).String(), MessageID: mid.String(),
				OutboxOffset: off, Partition: -1, Offset: -1,
				Detail: fmt.Sprintf("message committed again at Outbox offset %d with other content than at %d", off, first)})
		}
	}
}

// visit judges one dispatch record, or holds it when its source lies past the current window.
func (j *joiner) visit(ctx context.Context, p int32, rec *kgo.Record) (bool, error) {
	j.d.Reset()
	if err := proto.Unmarshal(rec.Value, &j.d); err != nil {
		j.res.gap(Gap{Topic: j.cfg.DispatchTopic, Partition: p, From: rec.Offset, To: rec.Offset + 1,
			Reason: fmt.Sprintf("undecodable dispatch record: %v", err)})
		return false, nil
	}
	if v := j.d.GetSchemaVersion(); v != schemaVersion {
		j.res.gap(Gap{Topic: j.cfg.DispatchTopic, Partition: p, From: rec.Offset, To: rec.Offset + 1,
			Reason: fmt.Sprintf("dispatch schema_version %d (this audit reads %d)", v, schemaVersion)})
		return false, nil
	}
	if j.d.GetSourceOffset() >= j.cur.to {
		return true, nil
	}
	j.meter.tick()
	j.res.Counts.DispatchRecords++
	return false, j.classify(ctx, p, rec.Offset, &j.d)
}

func (j *joiner) classify(ctx context.Context, p int32, off int64, d *internalv1.GroupDispatch) error {
	switch s := d.GetSourceOffset(); {
	case s < 0 || s >= j.b.outboxEnd:
		j.fail(KindDispatchWithoutCommit, p, off, d, -1,
			fmt.Sprintf("names Outbox offset %d; the Outbox holds [0, %d)", s, j.b.outboxEnd))
	case s < j.b.from || s >= j.b.to:
		j.res.Counts.OutsideRange++
	case s >= j.cur.from:
		j.match(j.cur, p, off, d)
	default:
		w, err := j.late(ctx, s)
		if err != nil {
			return err
		}
		j.match(w, p, off, d)
	}
	return nil
}

// late finds the window of a source whose window already closed: a kept one, or a re-read.
func (j *joiner) late(ctx context.Context, s int64) (*window, error) {
	for _, w := range j.recent {
		if w.holds(s) {
			return w, nil
		}
	}
	if j.reread.holds(s) {
		return j.reread, nil
	}
	to := min(s+rereadChunk, j.cur.from, j.b.to)
	r, err := newLogReader(j.cfg.seeds(), j.cfg.OutboxTopic, []PartitionRange{{Partition: 0, From: s, To: to}},
		func(g Gap) { g.Reason = "re-read for late dispatches: " + g.Reason; j.res.gap(g) })
	if err != nil {
		return nil, err
	}
	defer r.close()
	w := newWindow(s, to)
	w.reread = true
	if err := j.load(ctx, r, w, false); err != nil {
		return nil, err
	}
	j.reread = w
	return w, nil
}
