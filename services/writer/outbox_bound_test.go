package writer

import (
	"math"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/qim-dev/qim/contract"
)

// outboxBound must never under-count: for the largest audience and the widest numbers the
// envelope can carry, the real Outbox record (key + envelope of the record as the reserve
// script leaves it) fits the bound. An under-count would let a send be reserved that the
// producer then refuses forever.
func TestOutboxBoundCoversTheEnvelope(t *testing.T) {
	const recordLen = 1000
	reserved := func(extra int) []byte { // the record plus what the reserve script appends
		rec := make([]byte, recordLen)
		rec = protowire.AppendTag(rec, 4, protowire.VarintType)
		rec = protowire.AppendVarint(rec, math.MaxUint64)
		if extra > 0 {
			rec = protowire.AppendTag(rec, 17, protowire.VarintType)
			rec = protowire.AppendVarint(rec, math.MaxUint64)
		}
		return rec
	}
	env, err := envelope(reserved(0), contract.UserID(math.MaxUint64-1), contract.UserID(math.MaxUint64), math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	if got, bound := 16+len(env), outboxBound(recordLen, false); got > bound {
		t.Errorf("direct: Outbox record %d bytes, bound %d", got, bound)
	}
	recips := make([]uint64, contract.GroupMaxMembers)
	for i := range recips {
		recips[i] = math.MaxUint64 - uint64(i)
	}
	a := newAudiences(nil, contract.ShardCount(contract.MailboxShardsDefault))
	gid := contract.DeriveGroupID(contract.TenantID{Hi: 1}, 7, contract.U128{Hi: 2, Lo: 3})
	env, err = a.encode(contract.TenantID{Hi: 1}, gid, math.MaxUint64, recips, reserved(1), math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	if got, bound := 16+len(env), outboxBound(recordLen, true); got > bound {
		t.Errorf("group of %d: Outbox record %d bytes, bound %d", len(recips), got, bound)
	}
}
