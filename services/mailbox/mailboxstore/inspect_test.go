package mailboxstore

import (
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
)

// Inspect reports the identity and the entries at its canonical seq for every recipient, nothing
// for an unknown dispatch, the trim mark after a trim, and changes nothing it reads: a pull run
// afterwards still sees the same entries, and no index TTL was refreshed.
func TestInspectReadsIdentityEntriesAndTrimMark(t *testing.T) {
	f := newFix(t)
	a, b := f.user(), f.user()
	did, dup := newDispatchID(t), newDispatchID(t)
	first := f.mat(did, 1, 0, testDay, a, b)
	f.apply(first, f.mat(dup, 2, 1, testDay, a))
	again := f.mat(dup, 2, 2, testDay, a) // a replayed record: identity keeps offset 1
	again.PrevOffset = 1
	f.apply(again)
	ttlBefore := f.rdb.TTL(f.ctx, newUserKeys(f.shard, f.tenant, a).index).Val()

	probes := []Probe{
		{Shard: f.shard, DispatchID: did, Tenant: f.tenant, Users: []contract.UserID{a, b}, CreatedAtMs: first.CreatedAtMs},
		{Shard: f.shard, DispatchID: dup, Tenant: f.tenant, Users: []contract.UserID{a}, CreatedAtMs: first.CreatedAtMs},
		{Shard: f.shard, DispatchID: newDispatchID(t), Tenant: f.tenant, Users: []contract.UserID{a}, CreatedAtMs: first.CreatedAtMs},
	}
	got, now, err := f.store.Inspect(f.ctx, probes)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(now); d < -time.Minute || d > time.Minute {
		t.Fatalf("Redis TIME %v is not the server's clock", now)
	}
	if !got[0].Identity || got[0].Seq != seqOf(t, f.ep, 0) || string(got[0].Digest) != string(digest32(1)) {
		t.Fatalf("identity of the first dispatch: %+v", got[0])
	}
	for j, u := range []contract.UserID{a, b} {
		es := got[0].Users[j].Entries
		if len(es) != 1 || es[0].Seq != seqOf(t, f.ep, 0) || es[0].EventType != contract.EventMessage ||
			string(es[0].Value) != string(entryBytes(t, seqOf(t, f.ep, 0), did, u, contract.EventMessage)) {
			t.Fatalf("user %d entries %+v", u, es)
		}
	}
	if !got[1].Identity || got[1].Seq != seqOf(t, f.ep, 1) || len(got[1].Users[0].Entries) != 1 {
		t.Fatalf("a replayed dispatch must keep its first seq: %+v", got[1])
	}
	if got[2].Identity || got[2].Users != nil {
		t.Fatalf("unknown dispatch: %+v", got[2])
	}
	if ttl := f.rdb.TTL(f.ctx, newUserKeys(f.shard, f.tenant, a).index).Val(); ttl > ttlBefore {
		t.Fatalf("Inspect refreshed the index TTL (%v → %v)", ttlBefore, ttl)
	}

	mark, err := f.store.TrimBefore(f.ctx, f.tenant, b, testDay+1)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err = f.store.Inspect(f.ctx, probes[:1])
	if err != nil {
		t.Fatal(err)
	}
	if v := got[0].Users[1]; len(v.Entries) != 0 || v.TrimMark != mark || mark != seqOf(t, f.ep, 0) {
		t.Fatalf("after the trim user b reads %+v, want no entries and trim mark %v", v, mark)
	}
	if v := got[0].Users[0]; len(v.Entries) != 1 || v.TrimMark != 0 {
		t.Fatalf("an untrimmed user reads %+v", v)
	}
}

// The bucket expiry is the end of the message's UTC day plus the retention, as materialize sets it.
func TestBucketExpiresAt(t *testing.T) {
	created := time.Date(2026, 3, 4, 23, 59, 0, 0, time.UTC)
	want := time.Date(2026, 3, 5, 0, 0, 0, 0, time.UTC).Add(contract.MailboxRetention)
	if got := BucketExpiresAt(created.UnixMilli()); !got.Equal(want) {
		t.Fatalf("BucketExpiresAt = %v, want %v", got.UTC(), want)
	}
}
