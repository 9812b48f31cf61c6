package audit

import (
	"context"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/mailbox/mailboxstore"
)

// probeBatch is how many dispatch records one pair of Redis round trips inspects.
const probeBatch = 256

// pending is one dispatch record waiting for its mailbox inspection.
type pending struct {
	p       int32
	off     int64
	src     int64
	mid     []byte
	did     []byte
	digest  []byte
	created int64
}

// checker is the materialization pass: every dispatch record of the range that its shard's
// watermark covers must have one entry per recipient at its canonical mailbox_seq (the first
// copy's compose(epoch, offset), docs/architecture.md invariant 7), unless the entry is gone by
// retention or trim.
//
// Invariants: it only reads the mailbox Redis (mailboxstore.Inspect, never a pull, which
// refreshes TTLs); expiry is judged by the Redis clock against the bucket expiry the store
// derives from created_at_ms; a record above its shard's watermark is "not yet", never a pass.
//
// How: stream the dispatch partitions, batch probeBatch records, inspect their identities and
// entries in two pipelined round trips, judge each (recipient, record).
//
// Rejected: joining through the device-visible pull (pull.lua writes: it refreshes the index TTL
// and raises trim marks, so the audit would extend retention and change what it judges).
type checker struct {
	cfg    *Config
	res    *Result
	store  *mailboxstore.Store
	wm     map[int32]int64 // shard watermark when the pass started (-1: none)
	starts map[int32]int64 // first offset read per partition
	batch  []pending
	probes []mailboxstore.Probe
	d      internalv1.GroupDispatch
	entry  internalv1.MailboxEntry
	meter  *meter
}

func newChecker(ctx context.Context, cfg *Config, res *Result, parts []PartitionRange) (*checker, error) {
	c := &checker{cfg: cfg, res: res, store: mailboxstore.New(cfg.Mailbox, cfg.Shards), wm: map[int32]int64{},
		starts: map[int32]int64{}}
	for _, pr := range parts {
		c.starts[pr.Partition] = pr.From
		if pr.Partition >= int32(cfg.Shards) {
			continue
		}
		st, err := c.store.ReadShard(ctx, uint32(pr.Partition))
		if err != nil {
			return nil, fmt.Errorf("audit: watermark of shard %d: %w", pr.Partition, err)
		}
		c.wm[pr.Partition] = st.Watermark
	}
	return c, nil
}

// visit queues one dispatch record for inspection. Records that fail their own checks were
// counted by the dispatch pass (mismatch, wrong partition) and are not materializable.
func (c *checker) visit(ctx context.Context, p int32, rec *kgo.Record) (bool, error) {
	c.meter.tick()
	c.res.Counts.MailboxRecords++
	if !c.decode(rec.Value) {
		return false, nil // a gap of the dispatch pass already
	}
	tenant, ok := c.valid(p)
	if !ok {
		return false, nil
	}
	d := &c.d
	if rec.Offset > c.wm[p] {
		c.res.Counts.NotYet += int64(len(d.GetRecipients()))
		c.example(KindNotYet, pending{p: p, off: rec.Offset, src: d.GetSourceOffset(), mid: d.GetMessageId(), did: d.GetDispatchId()},
			0, fmt.Sprintf("above shard %d's watermark %d", p, c.wm[p]))
		return false, nil
	}
	users := make([]contract.UserID, len(d.GetRecipients()))
	for i, u := range d.GetRecipients() {
		users[i] = contract.UserID(u)
	}
	did, _ := contract.U128FromBytes(d.GetDispatchId())
	c.batch = append(c.batch, pending{p: p, off: rec.Offset, src: d.GetSourceOffset(), mid: d.GetMessageId(),
		did: d.GetDispatchId(), digest: d.GetPayloadDigest(), created: d.GetCreatedAtMs()})
	c.probes = append(c.probes, mailboxstore.Probe{Shard: uint32(p), DispatchID: contract.DispatchID(did), Tenant: tenant,
		Users: users, CreatedAtMs: d.GetCreatedAtMs()})
	if len(c.batch) >= probeBatch {
		return false, c.flush(ctx)
	}
	return false, nil
}

// decode reads a dispatch record into c.d; false for one the dispatch pass reports as a gap.
func (c *checker) decode(v []byte) bool {
	c.d.Reset()
	return proto.Unmarshal(v, &c.d) == nil && c.d.GetSchemaVersion() == schemaVersion
}

// valid checks what materialization relies on: the dispatch sits on its shard's partition, its
// id derives from (message_id, shard), and every recipient lives on that shard.
func (c *checker) valid(p int32) (contract.TenantID, bool) {
	d := &c.d
	tenant, err := contract.U128FromBytes(d.GetTenantId())
	if err != nil || int64(d.GetShard()) != int64(p) || p >= int32(c.cfg.Shards) || len(d.GetRecipients()) == 0 {
		return tenant, false
	}
	mid, err := contract.ParseMessageID(d.GetMessageId())
	if err != nil {
		return tenant, false
	}
	if id := contract.NewDispatchID(mid, d.GetShard()).Bytes(); string(id[:]) != string(d.GetDispatchId()) {
		return tenant, false
	}
	for _, u := range d.GetRecipients() {
		if c.cfg.Shards.UserShard(tenant, contract.UserID(u)) != d.GetShard() {
			return tenant, false
		}
	}
	return tenant, true
}

// flush inspects the queued records and judges them.
func (c *checker) flush(ctx context.Context) error {
	if len(c.batch) == 0 {
		return nil
	}
	ins, now, err := c.store.Inspect(ctx, c.probes)
	if err != nil {
		return fmt.Errorf("audit: inspect %d dispatches from partition %d offset %d: %w", len(c.batch), c.batch[0].p, c.batch[0].off, err)
	}
	for i := range c.batch {
		c.judge(&c.batch[i], &c.probes[i], &ins[i], now)
	}
	c.batch, c.probes = c.batch[:0], c.probes[:0]
	return nil
}

// judge decides one record: its identity must hold this record's digest at a seq no later than
// its own offset, and each recipient must have the entry at that seq unless it expired.
func (c *checker) judge(pd *pending, pr *mailboxstore.Probe, in *mailboxstore.Inspection, now time.Time) {
	n := int64(len(pr.Users))
	expired := !now.Before(mailboxstore.BucketExpiresAt(pd.created))
	cnt := &c.res.Counts
	switch canon := int64(in.Seq.LogOffset()); {
	case !in.Identity && expired:
		cnt.Expired += n
		return
	case !in.Identity:
		c.notMaterialized(pd, n, 0, "no dispatch identity in the mailbox Redis although the watermark covers the record")
		return
	case string(in.Digest) != string(pd.digest):
		c.notMaterialized(pd, n, 0, "the shard's identity of this dispatch_id holds another payload_digest")
		return
	case canon > pd.off:
		c.notMaterialized(pd, n, 0, fmt.Sprintf("the identity names offset %d, after this record the watermark covers", canon))
		return
	case canon < pd.off:
		cnt.MailboxDuplicate++
		if canon >= c.starts[pd.p] {
			return // its entries are checked with the first copy
		}
	}
	cnt.EntriesChecked += n
	for j, u := range pr.Users {
		v := &in.Users[j]
		switch {
		case c.hasEntry(v.Entries, in.Seq, pd):
			cnt.Materialized++
		case expired || (v.TrimMark != 0 && in.Seq <= v.TrimMark):
			cnt.Expired++
		default:
			c.notMaterialized(pd, 1, uint64(u), fmt.Sprintf("no entry at mailbox_seq %d:%d", in.Seq.Epoch(), in.Seq.LogOffset()))
		}
	}
}

func (c *checker) hasEntry(es []mailboxstore.StoredEntry, seq contract.MailboxSeq, pd *pending) bool {
	for _, e := range es {
		if e.Seq != seq || e.EventType != contract.EventMessage {
			continue
		}
		c.entry.Reset()
		if proto.Unmarshal(e.Value, &c.entry) != nil {
			continue
		}
		if c.entry.GetMailboxSeq() == uint64(seq) && string(c.entry.GetMessageId()) == string(pd.mid) &&
			string(c.entry.GetDispatchId()) == string(pd.did) {
			return true
		}
	}
	return false
}

func (c *checker) notMaterialized(pd *pending, n int64, user uint64, detail string) {
	c.res.Counts.NotMaterialized += n
	c.example(KindNotMaterialized, *pd, user, detail)
}

func (c *checker) example(k Kind, pd pending, user uint64, detail string) {
	c.res.example(k, Example{DispatchID: hex.EncodeToString(pd.did), MessageID: hex.EncodeToString(pd.mid),
		OutboxOffset: pd.src, Partition: pd.p, Offset: pd.off, User: user, Detail: detail})
}
