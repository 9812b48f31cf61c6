package mailboxstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// Inspect is the read-only view an auditor (audit/) takes of materialized dispatches: for each
// probe, the dispatch identity (payload_digest and canonical mailbox_seq) and, for every named
// recipient, the stored entries at that seq and the user's trim mark. It only reads (GET,
// ZRANGEBYLEX, HGET, TIME), never through pull.lua: a pull refreshes the index TTL and may raise
// the trim mark, and an audit must not change what it judges (nor extend anyone's retention).
//
// It decides nothing: whether an absent entry is lost or legitimately gone is the caller's
// judgement, made with BucketExpiresAt and the trim mark returned here.

// Probe names one dispatch of one shard and the recipients whose entries to read.
type Probe struct {
	Shard      uint32
	DispatchID contract.DispatchID
	Tenant     contract.TenantID
	Users      []contract.UserID
	// CreatedAtMs is the message's commit time; it picks the day bucket, as materialization did.
	CreatedAtMs int64
}

// Inspection answers one Probe.
type Inspection struct {
	// Identity: the dispatch identity exists; Digest and Seq are what it stores (the first
	// materialized copy's payload_digest and mailbox_seq).
	Identity bool
	Digest   []byte
	Seq      contract.MailboxSeq
	// Users[i] is what is stored for Probe.Users[i] (empty without Identity).
	Users []UserView
}

// UserView is one recipient's stored state for a probe.
type UserView struct {
	// Entries are the stored entries at the identity's Seq in the message's day bucket (at most
	// contract.EventGroupMaxEntries); none when the bucket or the entry is gone.
	Entries []StoredEntry
	// TrimMark is the user's trim mark (0 = never trimmed): every seq at or below it was removed
	// on purpose (TrimBefore, or a pull that found an expired day).
	TrimMark contract.MailboxSeq
}

// BucketExpiresAt is when the day bucket holding an entry of a message created at createdAtMs
// expires: the end of its UTC day plus the mailbox retention, exactly as materialize sets it.
func BucketExpiresAt(createdAtMs int64) time.Time {
	day := Day(createdAtMs)
	return time.Unix((day+1)*daySeconds+retentionSeconds, 0)
}

// Inspect reads probes in two pipelined round trips (identities and the server's clock, then
// the entries at each identity's seq) and returns the answers in probe order with the mailbox
// Redis's TIME, so expiry is judged by the clock that expires keys, not the caller's.
func (s *Store) Inspect(ctx context.Context, probes []Probe) ([]Inspection, time.Time, error) {
	out := make([]Inspection, len(probes))
	now, err := s.readIdentities(ctx, probes, out)
	if err != nil {
		return nil, time.Time{}, err
	}
	if err := s.readEntries(ctx, probes, out); err != nil {
		return nil, time.Time{}, err
	}
	return out, now, nil
}

func (s *Store) readIdentities(ctx context.Context, probes []Probe, out []Inspection) (time.Time, error) {
	var clock *redis.TimeCmd
	ids := make([]*redis.StringCmd, len(probes))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		clock = p.Time(ctx)
		for i, pr := range probes {
			ids[i] = p.Get(ctx, identityKey(pr.Shard, pr.DispatchID))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return time.Time{}, fmt.Errorf("mailboxstore: inspect %d identities: %w", len(probes), err)
	}
	for i, cmd := range ids {
		v, err := cmd.Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil || len(v) != 40 {
			return time.Time{}, fmt.Errorf("%w: dispatch identity on shard %d (%d bytes, %v)", ErrCorrupt, probes[i].Shard, len(v), err)
		}
		seq, err := parseSeq(v[32:])
		if err != nil {
			return time.Time{}, fmt.Errorf("%w: dispatch identity seq on shard %d", ErrCorrupt, probes[i].Shard)
		}
		out[i] = Inspection{Identity: true, Digest: []byte(v[:32]), Seq: seq}
	}
	return clock.Val(), nil
}

// userCmds are one recipient's reads of the second round trip.
type userCmds struct {
	entries *redis.StringSliceCmd
	trim    *redis.StringCmd
}

func (s *Store) readEntries(ctx context.Context, probes []Probe, out []Inspection) error {
	cmds := make([][]userCmds, len(probes))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, pr := range probes {
			if !out[i].Identity {
				continue
			}
			lo := string(appendSeq([]byte{'['}, out[i].Seq))
			hi := string(appendSeq([]byte{'('}, out[i].Seq+1)) // bit 63 is zero: no overflow
			cmds[i] = make([]userCmds, len(pr.Users))
			for j, u := range pr.Users {
				uk := newUserKeys(pr.Shard, pr.Tenant, u)
				cmds[i][j] = userCmds{
					entries: p.ZRangeByLex(ctx, uk.bucketKey(Day(pr.CreatedAtMs)), &redis.ZRangeBy{Min: lo, Max: hi,
						Count: contract.EventGroupMaxEntries}),
					trim: p.HGet(ctx, uk.index, "t"),
				}
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("mailboxstore: inspect entries: %w", err)
	}
	for i := range probes {
		if !out[i].Identity {
			continue
		}
		out[i].Users = make([]UserView, len(cmds[i]))
		for j, c := range cmds[i] {
			v, err := userView(c, probes[i].Shard)
			if err != nil {
				return err
			}
			out[i].Users[j] = v
		}
	}
	return nil
}

func userView(c userCmds, shard uint32) (UserView, error) {
	var v UserView
	members, err := c.entries.Result()
	if err != nil {
		return v, fmt.Errorf("mailboxstore: inspect bucket on shard %d: %w", shard, err)
	}
	for _, m := range members {
		e, err := inspectMember(m, shard)
		if err != nil {
			return v, err
		}
		v.Entries = append(v.Entries, e)
	}
	switch t, err := c.trim.Result(); {
	case errors.Is(err, redis.Nil):
	case err != nil:
		return v, fmt.Errorf("mailboxstore: inspect trim mark on shard %d: %w", shard, err)
	default:
		if v.TrimMark, err = parseSeq(t); err != nil {
			return v, fmt.Errorf("%w: trim mark on shard %d", ErrCorrupt, shard)
		}
	}
	return v, nil
}

// inspectMember splits a bucket member (seq ‖ event_type ‖ MailboxEntry), as pull's reply does.
func inspectMember(m string, shard uint32) (StoredEntry, error) {
	if len(m) <= memberHeader {
		return StoredEntry{}, fmt.Errorf("%w: bucket member of %d bytes on shard %d", ErrCorrupt, len(m), shard)
	}
	seq, err := parseSeq(m[:8])
	if err != nil {
		return StoredEntry{}, fmt.Errorf("%w: bucket member seq on shard %d", ErrCorrupt, shard)
	}
	et := contract.EventType(binary.BigEndian.Uint32([]byte(m[8:memberHeader])))
	return StoredEntry{Seq: seq, EventType: et, Value: []byte(m[memberHeader:])}, nil
}

// memberConversation is the conversation of a bucket member's MailboxEntry, for the
// redis-artifacts gate's check that no room conversation reaches a mailbox (ADR-0034).
func memberConversation(m string) (contract.ConversationID, error) {
	se, err := inspectMember(m, 0)
	if err != nil {
		return contract.ConversationID{}, err
	}
	var e internalv1.MailboxEntry
	if err := proto.Unmarshal(se.Value, &e); err != nil {
		return contract.ConversationID{}, fmt.Errorf("%w: bucket member's MailboxEntry: %v", ErrCorrupt, err)
	}
	u, err := contract.U128FromBytes(e.GetConversationId())
	if err != nil {
		return contract.ConversationID{}, fmt.Errorf("%w: bucket member's conversation_id: %v", ErrCorrupt, err)
	}
	return contract.ConversationID(u), nil
}
