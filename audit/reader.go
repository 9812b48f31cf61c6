package audit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Fetch sizing of the readers. A partition's queue holds at most what one fetch returned for it
// (franz-go strips the buffered data of a paused partition and fetches it again after resume),
// so the readers' memory is bounded by partitions × fetchPartitionBytes plus one fetch, times the
// compression ratio (records are held decompressed). 64 KiB rather than franz-go's 1 MiB: at
// 256 KiB the held chunks of 64 partitions took ~70 MB of a 90 MB live heap, at 64 KiB ~20 MB,
// with the same records/s (TestAuditThroughput, 300,000 messages).
const (
	fetchPartitionBytes = 64 << 10
	fetchMaxBytes       = 8 << 20
	fetchMaxWait        = 100 * time.Millisecond // only a fetch with no data waits this long
)

// partCursor is one partition's read state.
type partCursor struct {
	p     int32
	next  int64 // the offset expected next from the log
	end   int64 // exclusive
	queue []*kgo.Record
	held  bool // the visitor asked to stop at queue[0]
	done  bool // every record below end was queued (or the rest is a gap)
}

func (pc *partCursor) finished() bool { return pc.done && len(pc.queue) == 0 }

// logReader reads fixed offset ranges [start, end) of some partitions of one topic, each in
// offset order, and lets the visitor hold a partition at a record until release.
//
// Invariants: every offset of a range is either handed to the visitor exactly once (a held
// record is handed again after release, and its first answer did not count) or reported as a
// gap; a partition never advances past a held record; records at or past end are dropped, so a
// live log cannot extend the range.
//
// How: one franz-go direct consumer of all the ranges, with NoResetOffset so that a range start
// deleted by retention is an error, not a silent jump; a held or finished partition is paused.
//
// Rejected: one client per partition (64 clients, 64 fetch sessions for one reader; the
// MailboxNode's router rejects it for the same reason, services/mailbox/router.go), and
// rewinding a held partition with SetOffsets (re-fetches a whole chunk every window).
type logReader struct {
	cl    *kgo.Client // nil when every range is empty
	topic string
	parts []*partCursor
	byP   map[int32]*partCursor
	read  int64 // records queued so far
	onGap func(Gap)
}

// visitFn judges one record; hold keeps it (and its partition) for after release.
type visitFn func(p int32, r *kgo.Record) (hold bool, err error)

func newLogReader(seeds []kgo.Opt, topic string, ranges []PartitionRange, onGap func(Gap)) (*logReader, error) {
	r := &logReader{topic: topic, byP: map[int32]*partCursor{}, onGap: onGap}
	offsets := map[int32]kgo.Offset{}
	for _, pr := range ranges {
		pc := &partCursor{p: pr.Partition, next: pr.From, end: pr.To, done: pr.From >= pr.To}
		r.parts, r.byP[pr.Partition] = append(r.parts, pc), pc
		if !pc.done {
			offsets[pr.Partition] = kgo.NewOffset().At(pr.From)
		}
	}
	if len(offsets) == 0 {
		return r, nil
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.ConsumeResetOffset(kgo.NoResetOffset()),
		kgo.FetchMaxBytes(fetchMaxBytes), kgo.FetchMaxPartitionBytes(fetchPartitionBytes),
		kgo.FetchMaxWait(fetchMaxWait)}, seeds...)...)
	if err != nil {
		return nil, fmt.Errorf("audit: reader of %s: %w", topic, err)
	}
	r.cl = cl
	return r, nil
}

func (r *logReader) close() {
	if r.cl != nil {
		r.cl.Close()
	}
}

// run hands records to visit until every partition is finished or held.
func (r *logReader) run(ctx context.Context, visit visitFn) error {
	for {
		for _, pc := range r.parts {
			if err := r.drain(pc, visit); err != nil {
				return err
			}
		}
		if r.settled() {
			return nil
		}
		if err := r.poll(ctx); err != nil {
			return err
		}
	}
}

func (r *logReader) drain(pc *partCursor, visit visitFn) error {
	for !pc.held && len(pc.queue) > 0 {
		hold, err := visit(pc.p, pc.queue[0])
		if err != nil {
			return err
		}
		if hold {
			pc.held = true
			r.pause(pc)
			return nil
		}
		pc.queue[0] = nil
		pc.queue = pc.queue[1:]
	}
	return nil
}

func (r *logReader) settled() bool {
	for _, pc := range r.parts {
		if !pc.held && !pc.finished() {
			return false
		}
	}
	return true
}

// release lets every held partition continue.
func (r *logReader) release() {
	for _, pc := range r.parts {
		if pc.held {
			pc.held = false
			if !pc.done {
				r.cl.ResumeFetchPartitions(map[string][]int32{r.topic: {pc.p}})
			}
		}
	}
}

func (r *logReader) pause(pc *partCursor) {
	if r.cl != nil {
		r.cl.PauseFetchPartitions(map[string][]int32{r.topic: {pc.p}})
	}
}

// poll queues one fetch's records. A partition's fetch error ends that partition as a gap
// (fail closed); the client being closed or ctx ending ends the read.
func (r *logReader) poll(ctx context.Context) error {
	fs := r.cl.PollFetches(ctx)
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("audit: reading %s: %w", r.topic, err)
	}
	for _, fe := range fs.Errors() {
		if errors.Is(fe.Err, kgo.ErrClientClosed) || errors.Is(fe.Err, context.Canceled) {
			return fmt.Errorf("audit: reading %s: %w", r.topic, fe.Err)
		}
		if pc := r.byP[fe.Partition]; pc != nil && !pc.done {
			r.onGap(Gap{Topic: r.topic, Partition: pc.p, From: pc.next, To: pc.end,
				Reason: fmt.Sprintf("unreadable: %v", fe.Err)})
			pc.done = true
			r.pause(pc)
		}
	}
	fs.EachPartition(func(ftp kgo.FetchTopicPartition) {
		if pc := r.byP[ftp.Partition]; pc != nil && ftp.Topic == r.topic {
			for _, rec := range ftp.Records {
				r.accept(pc, rec)
			}
		}
	})
	return nil
}

// accept queues one fetched record, reporting any offsets the log skipped as a gap.
func (r *logReader) accept(pc *partCursor, rec *kgo.Record) {
	if pc.done || rec.Offset < pc.next {
		return
	}
	if rec.Offset > pc.next {
		r.onGap(Gap{Topic: r.topic, Partition: pc.p, From: pc.next, To: min(rec.Offset, pc.end),
			Reason: "offsets missing from the log (deleted, compacted or transaction markers)"})
	}
	if rec.Offset >= pc.end {
		pc.next, pc.done = pc.end, true
		r.pause(pc)
		return
	}
	pc.queue = append(pc.queue, rec)
	pc.next = rec.Offset + 1
	r.read++
	if pc.next == pc.end {
		pc.done = true
		r.pause(pc)
	}
}
