package audit

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

var unitTenant = contract.TenantID{Hi: 3, Lo: 5}

// unitEnvelope is a committed direct message to audience (as given, not sorted).
func unitEnvelope(t *testing.T, body []byte, audience ...uint64) *internalv1.CommittedEnvelope {
	t.Helper()
	mid, err := contract.NewMessageID(1_700_000_000_000, 7, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	mb, tb := mid.Bytes(), unitTenant.Bytes()
	cid := contract.DirectConversationID(unitTenant, 1, 2).Bytes()
	return &internalv1.CommittedEnvelope{SchemaVersion: 1, Record: &internalv1.MessageRecord{TenantId: tb[:],
		ConversationId: cid[:], ConversationKind: 1, ConversationSeq: 9, MessageId: mb[:], SenderUserId: audience[0],
		SenderDeviceId: "d", ClientMessageId: mb[:], MessageType: 1, Body: body, CreatedAtMs: 1_700_000_000_000},
		Audience: &internalv1.FrozenAudience{Audience: &internalv1.FrozenAudience_Direct{
			Direct: &internalv1.DirectAudience{RecipientUserIds: audience}}}}
}

// usersOn returns n users of unitTenant on shard (of 8), ascending, starting after from.
func usersOn(shard uint32, n int, from uint64) []uint64 {
	var out []uint64
	for u := from + 1; len(out) < n; u++ {
		if contract.ShardCount(8).UserShard(unitTenant, contract.UserID(u)) == shard {
			out = append(out, u)
		}
	}
	return out
}

// dispatchFor builds, field by field from the record, the dispatch the contract describes.
func dispatchFor(env *internalv1.CommittedEnvelope, shard uint32, recips []uint64, inline bool) *internalv1.GroupDispatch {
	r := env.GetRecord()
	mid, _ := contract.ParseMessageID(r.GetMessageId())
	id := contract.NewDispatchID(mid, shard).Bytes()
	d := &internalv1.GroupDispatch{SchemaVersion: 1, DispatchId: id[:], Shard: shard, MessageId: r.GetMessageId(),
		ConversationId: r.GetConversationId(), ConversationSeq: r.GetConversationSeq(), Recipients: recips,
		MessageType: r.GetMessageType(), SenderUserId: r.GetSenderUserId(), ClientMessageId: r.GetClientMessageId(),
		TenantId: r.GetTenantId(), CreatedAtMs: r.GetCreatedAtMs(), SenderDeviceId: r.GetSenderDeviceId()}
	if inline {
		d.Body = append([]byte{}, r.GetBody()...)
	}
	return d
}

func TestDeriveRoutesTheFrozenAudience(t *testing.T) {
	a, b := usersOn(2, 1, 0)[0], usersOn(5, 1, 0)[0]
	same := usersOn(3, 2, 0)
	cases := []struct {
		name     string
		audience []uint64
		want     map[uint32][]uint64
	}{
		{"two shards", []uint64{a, b}, map[uint32][]uint64{2: {a}, 5: {b}}},
		{"one shard, unsorted input", []uint64{same[1], same[0]}, map[uint32][]uint64{3: same}},
		{"a note to self", []uint64{a}, map[uint32][]uint64{2: {a}}},
	}
	var fp printer
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := unitEnvelope(t, []byte("hi"), c.audience...)
			_, exps, err := derive(env, 41, 8, &fp)
			if err != nil {
				t.Fatal(err)
			}
			if len(exps) != len(c.want) {
				t.Fatalf("%d expectations, want %d", len(exps), len(c.want))
			}
			for shard, users := range c.want {
				d := dispatchFor(env, shard, users, true)
				e := exps[contract.DispatchID(mustU128(t, d.GetDispatchId()))]
				if e == nil || e.offset != 41 || e.shard != shard {
					t.Fatalf("shard %d: expectation %+v", shard, e)
				}
				if f := e.compare(d, &fp); f != "" {
					t.Fatalf("shard %d: the contract's dispatch disagrees on %s", shard, f)
				}
			}
		})
	}
}

// groupAudience freezes recips (ascending) as a group audience of count members, routed with
// 8 shards.
func groupAudience(count uint32, recips ...uint64) *internalv1.FrozenAudience {
	var ts []uint32
	for _, u := range recips {
		ts = append(ts, contract.ShardCount(8).UserShard(unitTenant, contract.UserID(u)))
	}
	slices.Sort(ts)
	return &internalv1.FrozenAudience{Audience: &internalv1.FrozenAudience_Group{Group: &internalv1.GroupAudience{
		MembershipVersion: 2, MemberCount: count, TargetShards: slices.Compact(ts), RecipientUserIds: recips}}}
}

func TestDeriveRoutesAGroupAudience(t *testing.T) {
	on2, on5 := usersOn(2, 3, 0), usersOn(5, 2, 0)
	recips := append(slices.Clone(on2), on5...)
	slices.Sort(recips)
	env := unitEnvelope(t, []byte("hi"), recips[0])
	env.Audience = groupAudience(uint32(len(recips)), recips...)
	var fp printer
	_, exps, err := derive(env, 7, 8, &fp)
	if err != nil {
		t.Fatal(err)
	}
	if len(exps) != 2 {
		t.Fatalf("%d expectations for a group on 2 shards, want 2", len(exps))
	}
	for shard, users := range map[uint32][]uint64{2: on2, 5: on5} {
		d := dispatchFor(env, shard, users, true)
		e := exps[contract.DispatchID(mustU128(t, d.GetDispatchId()))]
		if e == nil {
			t.Fatalf("no expectation for shard %d", shard)
		}
		if f := e.compare(d, &fp); f != "" {
			t.Fatalf("shard %d: disagrees on %s", shard, f)
		}
		d.Recipients = users[:len(users)-1] // a member missing from its shard's dispatch
		if f := e.compare(d, &fp); f != "recipients" {
			t.Fatalf("shard %d: a dropped member compared as %q, want recipients", shard, f)
		}
	}
}

func TestDeriveRefusesWhatItCannotDerive(t *testing.T) {
	cases := []struct {
		name string
		edit func(*internalv1.CommittedEnvelope)
		want string
	}{
		{"unknown schema", func(e *internalv1.CommittedEnvelope) { e.SchemaVersion = 2 }, "schema_version 2"},
		{"zero message id", func(e *internalv1.CommittedEnvelope) { e.Record.MessageId = make([]byte, 16) }, "message_id"},
		{"short tenant", func(e *internalv1.CommittedEnvelope) { e.Record.TenantId = []byte{1} }, "16 bytes"},
		{"empty group audience", func(e *internalv1.CommittedEnvelope) {
			e.Audience = &internalv1.FrozenAudience{Audience: &internalv1.FrozenAudience_Group{Group: &internalv1.GroupAudience{}}}
		}, "group audience of 0 recipients"},
		{"group count disagrees", func(e *internalv1.CommittedEnvelope) {
			e.Audience = groupAudience(3, 4, 5)
		}, "member_count 3"},
		{"group target shards disagree", func(e *internalv1.CommittedEnvelope) {
			e.Audience = groupAudience(2, 4, 5)
			e.Audience.GetGroup().TargetShards = []uint32{0}
		}, "target_shards"},
		{"repeated member", func(e *internalv1.CommittedEnvelope) {
			e.Audience.GetDirect().RecipientUserIds = []uint64{4, 4}
		}, "repeats"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := unitEnvelope(t, nil, 4, 5)
			c.edit(env)
			_, _, err := derive(env, 0, 8, &printer{})
			if !errors.Is(err, errUnderivable) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want errUnderivable saying %q", err, c.want)
			}
		})
	}
}

// The body is inlined exactly when audience × body ≤ contract.InlineBodyBudgetBytes; its
// presence is part of the content (absent ≠ empty).
func TestDeriveInlineRule(t *testing.T) {
	users := usersOn(1, 2, 0)
	half := contract.InlineBodyBudgetBytes / 2
	cases := []struct {
		name   string
		body   []byte
		inline bool
	}{
		{"at the budget", make([]byte, half), true},
		{"one byte over", make([]byte, half+1), false},
		{"empty body is present", []byte{}, true},
	}
	var fp printer
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := unitEnvelope(t, c.body, users...)
			_, exps, err := derive(env, 0, 8, &fp)
			if err != nil {
				t.Fatal(err)
			}
			var e *expected
			for _, x := range exps {
				e = x
			}
			if f := e.compare(dispatchFor(env, 1, users, c.inline), &fp); f != "" {
				t.Fatalf("the contract's dispatch disagrees on %s", f)
			}
			if f := e.compare(dispatchFor(env, 1, users, !c.inline), &fp); !strings.HasPrefix(f, "content") {
				t.Fatalf("the other inline decision was not noticed (%q)", f)
			}
		})
	}
}

func TestCompareNamesTheField(t *testing.T) {
	users := usersOn(6, 2, 0)
	env := unitEnvelope(t, []byte("x"), users...)
	var fp printer
	_, exps, err := derive(env, 0, 8, &fp)
	if err != nil {
		t.Fatal(err)
	}
	var e *expected
	for _, x := range exps {
		e = x
	}
	cases := []struct {
		want string
		edit func(d *internalv1.GroupDispatch)
	}{
		{"message_id", func(d *internalv1.GroupDispatch) { d.MessageId = slices.Clone(d.MessageId); d.MessageId[0]++ }},
		{"conversation_id", func(d *internalv1.GroupDispatch) { d.ConversationId = make([]byte, 16) }},
		{"conversation_seq", func(d *internalv1.GroupDispatch) { d.ConversationSeq++ }},
		{"sender_user_id", func(d *internalv1.GroupDispatch) { d.SenderUserId++ }},
		{"shard", func(d *internalv1.GroupDispatch) { d.Shard++ }},
		{"recipients", func(d *internalv1.GroupDispatch) { d.Recipients = d.Recipients[:1] }},
		{"content", func(d *internalv1.GroupDispatch) { d.TraceId = []byte{1} }},
		{"content", func(d *internalv1.GroupDispatch) { d.CreatedAtMs++ }},
	}
	for _, c := range cases {
		d := dispatchFor(env, 6, users, true)
		c.edit(d)
		if f := e.compare(d, &fp); !strings.HasPrefix(f, c.want) {
			t.Errorf("compare = %q, want %q", f, c.want)
		}
	}
}

// payloadDigest is the contract's digest: stable under the source offset, changed by content.
func TestPayloadDigestIgnoresOnlySourceOffset(t *testing.T) {
	users := usersOn(0, 1, 0)
	d := dispatchFor(unitEnvelope(t, []byte("x"), users...), 0, users, true)
	var fp printer
	base, err := fp.payloadDigest(d)
	if err != nil {
		t.Fatal(err)
	}
	d.SourceOffset, d.PayloadDigest = 99, base[:]
	if again, _ := fp.payloadDigest(d); again != base || d.SourceOffset != 99 {
		t.Fatal("the digest depends on source_offset or payload_digest, or they were not restored")
	}
	e := proto.Clone(d).(*internalv1.GroupDispatch)
	e.ConversationSeq++
	if other, _ := fp.payloadDigest(e); other == base {
		t.Fatal("the digest ignores content")
	}
}

func mustU128(t *testing.T, b []byte) contract.U128 {
	t.Helper()
	u, err := contract.U128FromBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
