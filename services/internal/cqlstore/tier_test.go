package cqlstore

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/itest"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/msgstore"
)

// tierFixture is one direct conversation committed through the hot store and archived by hand
// (Put of each committed record, as the HistoryArchiver does).
type tierFixture struct {
	tenant contract.TenantID
	conv   contract.ConversationID
	sender contract.UserID
	rdb    *redis.Client
	hot    *msgstore.Store // no archive: fails below the floor
	tiered *msgstore.Store
	st     *Store
	seqs   []uint64 // committed, in commit order (ascending)
	raws   [][]byte // their complete records
}

func randID(t testing.TB) contract.U128 {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	u, _ := contract.U128FromBytes(b)
	u.Hi >>= 1
	u.Lo |= 1
	return u
}

func newTierFixture(t *testing.T) *tierFixture {
	rdb := redis.NewClient(&redis.Options{Addr: itest.Endpoints(t).RedisCore})
	t.Cleanup(func() { rdb.Close() })
	st := migrated(t)
	f := &tierFixture{tenant: randID(t), sender: contract.UserID(randID(t).Hi), rdb: rdb, st: st,
		hot: msgstore.New(rdb), tiered: msgstore.New(rdb, msgstore.WithArchive(HistoryTier(st)))}
	f.conv = contract.DirectConversationID(f.tenant, f.sender, contract.UserID(randID(t).Hi))
	return f
}

func (f *tierFixture) intent(t *testing.T, i int) msgstore.Intent {
	cmid := contract.ClientMessageID(randID(t))
	mid, err := contract.NewMessageID(uint64(time.Now().UnixMilli()), uint32(i), 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	tb, cb, mb, kb := f.tenant.Bytes(), f.conv.Bytes(), mid.Bytes(), contract.U128(cmid).Bytes()
	rec, err := proto.MarshalOptions{Deterministic: true}.Marshal(&internalv1.MessageRecord{TenantId: tb[:],
		ConversationId: cb[:], ConversationKind: uint32(f.conv.Kind()), MessageId: mb[:], SenderUserId: uint64(f.sender),
		SenderDeviceId: "d", ClientMessageId: kb[:], MessageType: 1, Body: []byte(fmt.Sprintf("body %d", i)),
		CreatedAtMs: time.Now().UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}
	in := msgstore.Intent{Key: msgstore.CommitKey{Tenant: f.tenant, Sender: f.sender, ClientMessageID: cmid, Conversation: f.conv},
		MessageID: mid, Record: rec, NowMs: time.Now().UnixMilli()}
	copy(in.Identity[:], "QIMD")
	copy(in.Identity[4:], kb[:])
	return in
}

// commit commits n messages, committed_at = cat(i), skipping gap seqs before message i when
// gaps[i] is set, and archives every committed record.
func (f *tierFixture) commit(t *testing.T, ctx context.Context, n int, gaps map[int]int64, cat func(int) int64) {
	tag := contract.ConversationCommitBucket(f.tenant, f.conv).KeyTag()
	tb, cb := f.tenant.Bytes(), f.conv.Bytes()
	counter := fmt.Sprintf("qim:cseq:%s:%x:%x", tag, tb[:], cb[:]) // the documented layout (msgstore/doc.go)
	var rows []Row
	for i := 0; i < n; i++ {
		if g, ok := gaps[i]; ok {
			f.rdb.IncrBy(ctx, counter, g)
		}
		cs, errs := f.hot.ReserveAndRecord(ctx, []msgstore.Intent{f.intent(t, i)})
		if errs[0] != nil {
			t.Fatal(errs[0])
		}
		if e := f.hot.MarkCommitted(ctx, []msgstore.MarkRequest{{Key: cs[0].Key, CommittedAtMs: cat(i)}}); e[0] != nil {
			t.Fatal(e[0])
		}
		var rec internalv1.MessageRecord
		if err := proto.Unmarshal(cs[0].Record, &rec); err != nil {
			t.Fatal(err)
		}
		row, err := RowFromRecord(&rec)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, row)
		f.seqs, f.raws = append(f.seqs, uint64(cs[0].Seq)), append(f.raws, cs[0].Record)
	}
	for len(rows) > 0 {
		k := min(len(rows), 500)
		if _, err := f.st.Put(ctx, rows[:k], time.Now()); err != nil {
			t.Fatal(err)
		}
		rows = rows[k:]
	}
}

// readAll pages one direction to its end and returns the seqs in reading order.
func (f *tierFixture) readAll(t *testing.T, ctx context.Context, s *msgstore.Store, dir msgstore.Direction, limit, maxBytes int) ([]uint64, error) {
	var seen []uint64
	q := msgstore.HistoryQuery{Tenant: f.tenant, Conversation: f.conv, Direction: dir, Limit: limit, MaxBytes: maxBytes}
	for pages := 0; pages < 10000; pages++ {
		p, err := s.HistoryPage(ctx, q)
		if err != nil {
			return seen, err
		}
		var page []uint64
		for _, raw := range p.Records {
			var rec internalv1.MessageRecord
			if err := proto.Unmarshal(raw, &rec); err != nil {
				t.Fatal(err)
			}
			page = append(page, rec.GetConversationSeq())
		}
		if !slices.IsSorted(page) {
			t.Fatalf("page not ascending: %v", page)
		}
		if dir == msgstore.Older {
			slices.Reverse(page)
		}
		seen = append(seen, page...)
		if !p.HasMore {
			return seen, nil
		}
		if p.NextAnchor == q.Anchor {
			t.Fatalf("paging does not advance at anchor %d", q.Anchor)
		}
		q.Anchor = p.NextAnchor
	}
	t.Fatal("more than 10000 pages")
	return nil, nil
}

// trim runs TrimHot until it stops making progress and returns the records trimmed and the
// candidates the last call held.
func (f *tierFixture) trim(t *testing.T, ctx context.Context, cutoff int64) (trimmed, held int) {
	for {
		r, err := f.hot.TrimHot(ctx, cutoff, 100)
		if err != nil {
			t.Fatal(err)
		}
		trimmed += r.Trimmed
		if !r.More || r.Trimmed == 0 {
			return trimmed, r.Held
		}
	}
}

// rehot writes committed record i back into the hot tier under its seq, as a commit reserved
// before a trim and recorded after it would (the documented layout, msgstore/doc.go).
func (f *tierFixture) rehot(t *testing.T, ctx context.Context, seq uint64, raw []byte) {
	tag := contract.ConversationCommitBucket(f.tenant, f.conv).KeyTag()
	tb, cb := f.tenant.Bytes(), f.conv.Bytes()
	p := fmt.Sprintf("%s:%x:%x:", tag, tb[:], cb[:])
	if err := f.rdb.Set(ctx, fmt.Sprintf("qim:hrec:%s%d", p, seq), raw, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := f.rdb.ZAdd(ctx, fmt.Sprintf("qim:hidx:%s%d", p, seq/1024), redis.Z{Score: float64(seq), Member: seq}).Err(); err != nil {
		t.Fatal(err)
	}
}

func tailSeqs(t *testing.T, tails []msgstore.Tail) [][]uint64 {
	out := make([][]uint64, len(tails))
	for i, tl := range tails {
		for _, raw := range tl.Records {
			var rec internalv1.MessageRecord
			if err := proto.Unmarshal(raw, &rec); err != nil {
				t.Fatal(err)
			}
			out[i] = append(out[i], rec.GetConversationSeq())
		}
	}
	return out
}
