package audit

import (
	"encoding/hex"
	"fmt"
	"sort"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// match judges one dispatch d read at (p, off) against the expectations of w, the window of
// its source. The checks run from what the dispatch says about itself (its identity, its
// partition) to what it must agree with (the committed record, then an earlier copy).
func (j *joiner) match(w *window, p int32, off int64, d *internalv1.GroupDispatch) {
	src := d.GetSourceOffset()
	mid, err := contract.ParseMessageID(d.GetMessageId())
	if err != nil {
		j.fail(KindMismatch, p, off, d, src, fmt.Sprintf("message_id: %v", err))
		return
	}
	id := contract.NewDispatchID(mid, d.GetShard())
	if raw := id.Bytes(); string(raw[:]) != string(d.GetDispatchId()) {
		j.fail(KindMismatch, p, off, d, src, fmt.Sprintf("dispatch_id is not derived from (message_id, shard %d)", d.GetShard()))
		return
	}
	if int64(d.GetShard()) != int64(p) {
		j.fail(KindWrongPartition, p, off, d, src, fmt.Sprintf("dispatch for shard %d on partition %d", d.GetShard(), p))
		return
	}
	e := w.exp[id]
	if e == nil {
		if at, ok := w.msgs[mid]; ok {
			j.fail(KindMismatch, p, off, d, at, fmt.Sprintf("the message committed at Outbox offset %d has no recipient on shard %d", at, d.GetShard()))
		} else {
			j.fail(KindDispatchWithoutCommit, p, off, d, src, fmt.Sprintf("Outbox offset %d does not commit this message", src))
		}
		return
	}
	if field := e.compare(d, &j.fp); field != "" {
		j.fail(KindMismatch, p, off, d, e.offset, fmt.Sprintf("%s differs from the record committed at Outbox offset %d", field, e.offset))
		return
	}
	if dg, err := j.fp.payloadDigest(d); err != nil || string(dg[:]) != string(d.GetPayloadDigest()) {
		j.fail(KindMismatch, p, off, d, e.offset, "payload_digest is not the digest of the dispatch's content "+
			"(the MailboxNode would stop the shard on it)")
		return
	}
	j.seen(w, id, e, p, off, d)
}

// seen accounts a dispatch that agrees with its committed record: the first copy matches (and
// clears the loss counted when its window closed, for a late one); a later copy is a replay
// when its payload_digest equals the first copy's, a mismatch otherwise (the MailboxNode would
// stop the shard on it, services/mailbox/dispatch.go).
func (j *joiner) seen(w *window, id contract.DispatchID, e *expected, p int32, off int64, d *internalv1.GroupDispatch) {
	c := &j.res.Counts
	switch {
	case w.reread:
		if _, ok := j.missing[id]; ok {
			delete(j.missing, id)
			c.CommittedWithoutDispatch--
			c.Matched++
		} else {
			c.ReplayedDuplicates++ // its digest was checked against its own content in match
		}
	case e.seen == 0:
		e.seen = 1
		copy(e.digest[:], d.GetPayloadDigest())
		c.Matched++
		if w.closed {
			c.CommittedWithoutDispatch--
			if _, ok := j.missing[id]; ok {
				delete(j.missing, id)
			} else {
				j.lost--
			}
		}
	case string(e.digest[:]) != string(d.GetPayloadDigest()):
		j.fail(KindMismatch, p, off, d, e.offset, "payload_digest differs from the first copy of this dispatch_id")
	default:
		e.seen++
		c.ReplayedDuplicates++
	}
}

// close counts w's unseen expectations as committed without dispatch and keeps w as recent.
func (j *joiner) close(w *window) {
	for id, e := range w.exp {
		if e.seen != 0 {
			continue
		}
		j.res.Counts.CommittedWithoutDispatch++
		if len(j.missing) < j.cfg.MaxTracked {
			j.missing[id] = missingRef{offset: e.offset, shard: e.shard, msg: e.msg}
		} else {
			j.lost++
		}
	}
	w.closed = true
	j.recent = append(j.recent, w)
	if len(j.recent) > j.cfg.Recent {
		j.recent[0] = nil
		j.recent = j.recent[1:]
	}
}

// finish turns the losses still standing into examples (lowest Outbox offsets first).
func (j *joiner) finish() {
	refs := make([]struct {
		id contract.DispatchID
		missingRef
	}, 0, len(j.missing))
	for id, m := range j.missing {
		refs = append(refs, struct {
			id contract.DispatchID
			missingRef
		}{id, m})
	}
	sort.Slice(refs, func(a, b int) bool { return refs[a].offset < refs[b].offset })
	for _, r := range refs {
		j.res.example(KindCommittedWithoutDispatch, Example{DispatchID: contract.U128(r.id).String(), MessageID: r.msg.String(),
			OutboxOffset: r.offset, Partition: int32(r.shard), Offset: -1,
			Detail: fmt.Sprintf("no dispatch for shard %d in partition %d", r.shard, r.shard)})
	}
	if j.lost > 0 {
		j.res.Notes = append(j.res.Notes, fmt.Sprintf("%d committed-without-dispatch dispatches beyond the %d remembered "+
			"were not kept by id: a late copy of one would have counted as a replay, so that count may overstate", j.lost, j.cfg.MaxTracked))
	}
}

// fail counts one failure of kind and keeps it as an example.
func (j *joiner) fail(k Kind, p int32, off int64, d *internalv1.GroupDispatch, outboxOff int64, detail string) {
	c := &j.res.Counts
	switch k {
	case KindMismatch:
		c.Mismatch++
	case KindWrongPartition:
		c.WrongPartition++
	case KindDispatchWithoutCommit:
		c.DispatchWithoutCommit++
	}
	j.res.example(k, Example{DispatchID: hex.EncodeToString(d.GetDispatchId()), MessageID: hex.EncodeToString(d.GetMessageId()),
		OutboxOffset: outboxOff, Partition: p, Offset: off, Detail: detail})
}
