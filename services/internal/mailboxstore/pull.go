package mailboxstore

import (
	"context"
	"encoding/binary"
	"fmt"

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
	if q.Limit < 1 || q.Limit > maxPullLimit || q.MaxBytes < 1 {
		return PullResult{}, fmt.Errorf("%w: limit %d, max bytes %d", ErrInvalid, q.Limit, q.MaxBytes)
	}
	if q.StoreCursor && q.Device == "" {
		return PullResult{}, fmt.Errorf("%w: storing a cursor needs a device id", ErrInvalid)
	}
	if _, err := contract.NewMailboxSeq(uint64(q.Cursor)); err != nil {
		return PullResult{}, fmt.Errorf("%w: %v", ErrInvalid, err)
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
	c := call{Script: scripts.pull,
		Keys: []string{epochKey(shard), watermarkKey(shard), uk.index, cursorKey(shard, q.Tenant, q.User, q.Device)},
		Args: []any{cursor, lower, q.Limit, q.MaxBytes, uk.bucket, store, cursorTTL, q.Limit + contract.EventGroupMaxEntries}}
	cmds, err := runCalls(ctx, s.rdb, []call{c})
	if err != nil {
		return PullResult{}, fmt.Errorf("mailboxstore: pull on shard %d: %w", shard, err)
	}
	if err := cmds[0].Err(); err != nil {
		return PullResult{}, scriptError("pull", shard, -1, contract.DispatchID{}, err)
	}
	return pullReply(cmds[0].Val(), q.Cursor, shard)
}

func pullReply(v any, cursor contract.MailboxSeq, shard uint32) (PullResult, error) {
	r, ok := v.([]any)
	if !ok || len(r) < 3 {
		return PullResult{}, fmt.Errorf("%w: pull reply %T on shard %d", ErrCorrupt, v, shard)
	}
	status, _ := r[0].(string)
	next, _ := r[1].(string)
	more, _ := r[2].(int64)
	res := PullResult{Next: cursor, HasMore: more == 1, Expired: status == "EXP"}
	if next != "" {
		n, err := parseSeq(next)
		if err != nil {
			return PullResult{}, fmt.Errorf("%w: pull next cursor on shard %d", ErrCorrupt, shard)
		}
		res.Next = n
	}
	res.Entries = make([]StoredEntry, 0, len(r)-3)
	for _, x := range r[3:] {
		m, _ := x.(string)
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
