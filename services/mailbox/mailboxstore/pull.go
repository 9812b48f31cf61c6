package mailboxstore

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/contract"
)

// memberHeader is the seq (8 B) and event_type (4 B) every bucket member starts with.
const memberHeader = 12

// maxPullLimit bounds the entries one pull may ask for; the MailboxNode clamps far lower.
const maxPullLimit = 100_000

// PullQuery asks for one user's entries after a device cursor.
type PullQuery struct {
	Tenant contract.TenantID
	User   contract.UserID
	Device string
	// Cursor is what the device has durably applied; 0 = nothing (includes log offset 0).
	Cursor contract.MailboxSeq
	// Limit is the number of entries to aim for (whole event groups: the last group may exceed it).
	Limit int
	// MaxBytes is a soft cap on the stored size of the returned entries; the first group is
	// always returned whole.
	MaxBytes int
	// StoreCursor records Cursor as the device's cursor (forward only). PULL_MAILBOX sets it;
	// HasOffline does not.
	StoreCursor bool
}

// StoredEntry is one mailbox entry as stored.
type StoredEntry struct {
	Seq       contract.MailboxSeq
	EventType contract.EventType
	Value     []byte // encoded MailboxEntry
}

// PullResult answers a PullQuery.
type PullResult struct {
	Entries []StoredEntry // ascending by Seq, whole event groups
	// Next is the cursor the device stores after applying Entries: the last group's seq, or the
	// query's cursor when nothing was returned; after Expired, the cursor to resume from.
	Next    contract.MailboxSeq
	HasMore bool
	// Expired: the cursor is behind the user's trim mark (or everything, index included, has
	// expired); Entries is empty and the device must REBUILD.
	Expired bool
}

// Pull returns the user's entries with cursor < seq ≤ compose(epoch, watermark) of the user's
// shard, across the user's day buckets, and records the device cursor when asked. See pull.lua.
func (s *Store) Pull(ctx context.Context, q PullQuery) (PullResult, error) {
	res, errs, err := s.PullMany(ctx, []PullQuery{q})
	if err != nil {
		return PullResult{}, err
	}
	return res[0], errs[0]
}

// PullMany runs many pulls (any users, any shards) as one pipeline of pull.lua calls, so a
// MailboxNode serving the pulls a gateway coalesced pays one Redis round trip for all of them.
// errs[i] is pull i's own failure (an invalid query, a script error, a corrupt reply) and never
// affects another pull; err is a failure of the round trip itself, after which no outcome is
// known (each call may or may not have stored its cursor, which is forward-only, so the whole
// batch may be retried).
func (s *Store) PullMany(ctx context.Context, qs []PullQuery) (res []PullResult, errs []error, err error) {
	res, errs = make([]PullResult, len(qs)), make([]error, len(qs))
	calls := make([]call, 0, len(qs))
	idx := make([]int, 0, len(qs))       // calls[k] answers qs[idx[k]]
	shards := make([]uint32, 0, len(qs)) // the shard of calls[k], for its errors
	for i, q := range qs {
		c, shard, err := s.pullCall(q)
		if err != nil {
			errs[i] = err
			continue
		}
		calls, idx, shards = append(calls, c), append(idx, i), append(shards, shard)
	}
	if len(calls) == 0 {
		return res, errs, nil
	}
	cmds, err := runCalls(ctx, s.rdb, calls)
	if err != nil {
		return nil, nil, fmt.Errorf("mailboxstore: pull of %d queries: %w", len(calls), err)
	}
	for k, cmd := range cmds {
		i, shard := idx[k], shards[k]
		if err := cmd.Err(); err != nil {
			errs[i] = scriptError("pull", shard, -1, contract.DispatchID{}, err)
			continue
		}
		res[i], errs[i] = pullReply(cmd, qs[i].Cursor, shard)
	}
	return res, errs, nil
}

// pullCall validates one query and builds its pull.lua call on the user's shard.
func (s *Store) pullCall(q PullQuery) (call, uint32, error) {
	if q.Limit < 1 || q.Limit > maxPullLimit || q.MaxBytes < 1 {
		return call{}, 0, fmt.Errorf("%w: limit %d, max bytes %d", ErrInvalid, q.Limit, q.MaxBytes)
	}
	if q.StoreCursor && q.Device == "" {
		return call{}, 0, fmt.Errorf("%w: storing a cursor needs a device id", ErrInvalid)
	}
	if _, err := contract.NewMailboxSeq(uint64(q.Cursor)); err != nil {
		return call{}, 0, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	shard := s.shards.UserShard(q.Tenant, q.User)
	uk := newUserKeys(shard, q.Tenant, q.User)
	cursor, lower := []byte{}, []byte("-")
	if q.Cursor != 0 {
		cursor = appendSeq(nil, q.Cursor)
		lower = appendSeq([]byte{'['}, q.Cursor+1)
	}
	store := "0"
	if q.StoreCursor {
		store = "1"
	}
	return scripts.pull.Call(&pullArgs{
		EpochKey: epochKey(shard), WatermarkKey: watermarkKey(shard), IndexKey: uk.index,
		CursorKey: cursorKey(shard, q.Tenant, q.User, q.Device),
		Cursor:    cursor, Lower: lower, Limit: q.Limit, MaxBytes: q.MaxBytes, Prefix: uk.bucket, Store: store,
		TTL: cursorTTL, Window: q.Limit + contract.EventGroupMaxEntries,
	}), shard, nil
}

func pullReply(cmd *redis.Cmd, cursor contract.MailboxSeq, shard uint32) (PullResult, error) {
	r, err := scripts.pull.Decode(cmd)
	if err != nil {
		return PullResult{}, fmt.Errorf("%w: pull reply on shard %d: %v", ErrCorrupt, shard, err)
	}
	status := r.Status
	res := PullResult{Next: cursor, HasMore: r.HasMore == 1, Expired: status == "EXP"}
	if r.Next != "" {
		n, err := parseSeq(r.Next)
		if err != nil {
			return PullResult{}, fmt.Errorf("%w: pull next cursor on shard %d", ErrCorrupt, shard)
		}
		res.Next = n
	}
	res.Entries = make([]StoredEntry, 0, len(r.Members))
	for _, m := range r.Members {
		if len(m) <= memberHeader {
			return PullResult{}, fmt.Errorf("%w: bucket member of %d bytes on shard %d", ErrCorrupt, len(m), shard)
		}
		seq, err := parseSeq(m[:8])
		if err != nil {
			return PullResult{}, fmt.Errorf("%w: bucket member seq on shard %d", ErrCorrupt, shard)
		}
		et := contract.EventType(binary.BigEndian.Uint32([]byte(m[8:memberHeader])))
		res.Entries = append(res.Entries, StoredEntry{Seq: seq, EventType: et, Value: []byte(m[memberHeader:])})
	}
	if status != "OK" && status != "EXP" {
		return PullResult{}, fmt.Errorf("%w: pull status %q on shard %d", ErrCorrupt, status, shard)
	}
	return res, nil
}
