package cqlstore

import (
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

func TestMigrateIsIdempotentAndOpenRefusesOtherVersions(t *testing.T) {
	ctx := testCtx(t)
	cfg := freshKeyspace(t)
	if _, err := Open(ctx, cfg); err == nil {
		t.Fatal("Open of a keyspace never migrated succeeded")
	}
	applied, err := Migrate(ctx, cfg, MigrateOptions{ReplicationFactor: 1})
	if err != nil || len(applied) != len(migrations) {
		t.Fatalf("first Migrate applied %v, %v; want every version", applied, err)
	}
	if applied, err = Migrate(ctx, cfg, MigrateOptions{ReplicationFactor: 1}); err != nil || len(applied) != 0 {
		t.Fatalf("second Migrate applied %v, %v; want nothing", applied, err)
	}
	st, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// message_record must have no table-level TTL: a compliance hold would be deleted silently.
	var ttl int
	if err := st.s.Query(`SELECT default_time_to_live FROM system_schema.tables WHERE keyspace_name = ? AND table_name = 'message_record'`,
		cfg.Keyspace).WithContext(ctx).Scan(&ttl); err != nil || ttl != 0 {
		t.Fatalf("message_record default_time_to_live = %d, %v; want 0", ttl, err)
	}
	// A newer binary's migration is refused by this one, by Migrate and by Open.
	if err := st.s.Query(`INSERT INTO schema_migrations (version, description) VALUES (?, 'future')`,
		SchemaVersion()+1).WithContext(ctx).Exec(); err != nil {
		t.Fatal(err)
	}
	var se *SchemaError
	if _, err := Migrate(ctx, cfg, MigrateOptions{ReplicationFactor: 1}); !errors.As(err, &se) || se.Have != SchemaVersion()+1 {
		t.Fatalf("Migrate over a newer schema = %v, want *SchemaError", err)
	}
	if _, err := Open(ctx, cfg); !errors.As(err, &se) {
		t.Fatalf("Open of a newer schema = %v, want *SchemaError", err)
	}
}

func rowsOf(t *testing.T, conv byte, seqs ...uint64) []Row {
	t.Helper()
	var out []Row
	for _, s := range seqs {
		rec := validRecord()
		rec.ConversationId, rec.ConversationSeq, rec.MessageId = id16(conv), s, id16(byte(s))
		rec.MessageId[0] = conv
		rec.Body = []byte{byte(s), conv}
		rec.CreatedAtMs = time.Now().UnixMilli()
		r, err := RowFromRecord(rec)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func TestPutThenRangeReadsBackEveryRecordAcrossBuckets(t *testing.T) {
	ctx := testCtx(t)
	st := migrated(t)
	w := uint64(contract.MessageSeqBucketWidth)
	seqs := []uint64{1, 2, 5, w - 1, w, w + 1, 3*w + 7}
	rows := rowsOf(t, 9, seqs...)
	for range 2 { // the second Put is a replay: same keys, same values
		res, err := st.Put(ctx, rows, time.Now())
		if err != nil || res.Written != len(rows) || res.Expired != 0 {
			t.Fatalf("Put = %+v, %v", res, err)
		}
	}
	got, scanned, err := st.Range(ctx, rows[0].Tenant, rows[0].Conversation, 0, 4*w, 100)
	if err != nil || scanned != 4*w {
		t.Fatalf("Range = %d messages scanned to %d, %v; want the whole range", len(got), scanned, err)
	}
	if len(got) != len(seqs) {
		t.Fatalf("Range read %d messages, want %d", len(got), len(seqs))
	}
	for i, a := range got {
		if a.Seq != seqs[i] || a.Sender != 42 || !proto.Equal(a.Record, recordOf(rows[i])) {
			t.Fatalf("message %d: seq %d sender %d, record %v; want seq %d, sender 42, the archived record", i, a.Seq, a.Sender, a.Record, seqs[i])
		}
	}
	// Bounds: (after, upTo] and the limit.
	got, _, err = st.Range(ctx, rows[0].Tenant, rows[0].Conversation, 2, w, 100)
	if err != nil || len(got) != 3 || got[0].Seq != 5 || got[2].Seq != w {
		t.Fatalf("Range (2, %d] = %d messages, %v", w, len(got), err)
	}
	if got, scanned, err = st.Range(ctx, rows[0].Tenant, rows[0].Conversation, 0, 4*w, 4); err != nil || len(got) != 4 ||
		got[3].Seq != w-1 || scanned != w-1 {
		t.Fatalf("Range limit 4 = %d messages scanned to %d, %v; want 4, continuing after %d", len(got), scanned, err, w-1)
	}
	// A range over empty buckets stops after HistoryMaxEmptyBucketScan of them and says where.
	far := uint64(100 * contract.HistoryMaxEmptyBucketScan * contract.MessageSeqBucketWidth)
	got, scanned, err = st.Range(ctx, rows[0].Tenant, rows[0].Conversation, 3*w+7, far, 100)
	if want := uint64(3+contract.HistoryMaxEmptyBucketScan)*w - 1; err != nil || len(got) != 0 || scanned != want {
		t.Fatalf("Range over empty buckets = %d messages scanned to %d, %v; want none, continuing after %d", len(got), scanned, err, want)
	}
}

func recordOf(r Row) *internalv1.MessageRecord {
	var rec internalv1.MessageRecord
	if err := proto.Unmarshal(r.Record, &rec); err != nil {
		panic(err)
	}
	return &rec
}

func TestPutWritesTheRetentionAsRowTTL(t *testing.T) {
	ctx := testCtx(t)
	st := migrated(t)
	rows := rowsOf(t, 3, 1, 2, 3)
	rows[1].Retention = contract.RetentionComplianceHold
	rows[2].CreatedAtMs = time.Now().Add(-contract.HistoryRetention - time.Hour).UnixMilli() // already past
	res, err := st.Put(ctx, rows, time.Now())
	if err != nil || res.Written != 2 || res.Expired != 1 {
		t.Fatalf("Put = %+v, %v; want 2 written, 1 expired", res, err)
	}
	ttlOf := func(table string, seq uint64) (ttl int, found bool) {
		tn, c := rows[0].Tenant.Bytes(), rows[0].Conversation.Bytes()
		col := map[string]string{"message_record": "record", "history_index": "message_id"}[table]
		it := st.s.Query(`SELECT TTL(`+col+`) FROM `+table+` WHERE tenant_id = ? AND conversation_id = ? AND seq_bucket = 0 AND conversation_seq = ?`,
			tn[:], c[:], int64(seq)).WithContext(ctx).Iter()
		found = it.Scan(&ttl)
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		return ttl, found
	}
	for _, table := range []string{"message_record", "history_index"} {
		if ttl, ok := ttlOf(table, 1); !ok || ttl <= 0 || ttl > int(contract.HistoryRetention/time.Second) {
			t.Errorf("%s default row TTL = %d (found %v), want about 30 days", table, ttl, ok)
		}
		if ttl, ok := ttlOf(table, 2); !ok || ttl != 0 {
			t.Errorf("%s compliance-hold row TTL = %d (found %v), want none", table, ttl, ok)
		}
		if _, ok := ttlOf(table, 3); ok {
			t.Errorf("%s holds the row whose retention had ended", table)
		}
	}
}

func TestRangeFailsWholeWhenAnIndexedRecordIsMissing(t *testing.T) {
	ctx := testCtx(t)
	st := migrated(t)
	rows := rowsOf(t, 4, 1, 2, 3)
	if _, err := st.Put(ctx, rows, time.Now()); err != nil {
		t.Fatal(err)
	}
	tn, c := rows[0].Tenant.Bytes(), rows[0].Conversation.Bytes()
	// What a broken writer order would leave: an index row whose record never arrived.
	if err := st.s.Query(`INSERT INTO history_index (tenant_id, conversation_id, seq_bucket, conversation_seq, message_id, sender_user_id)
		VALUES (?, ?, 0, 4, ?, 42)`, tn[:], c[:], id16(4)).WithContext(ctx).Exec(); err != nil {
		t.Fatal(err)
	}
	got, _, err := st.Range(ctx, rows[0].Tenant, rows[0].Conversation, 0, 10, 100)
	if !errors.Is(err, ErrCorrupt) || got != nil {
		t.Fatalf("Range over a missing record = %d messages, %v; want no page and ErrCorrupt", len(got), err)
	}
	if got, _, err := st.Range(ctx, rows[0].Tenant, rows[0].Conversation, 0, 3, 100); err != nil || len(got) != 3 {
		t.Fatalf("Range below the hole = %d messages, %v", len(got), err)
	}
}

// A Put that dies between its phases must leave records without index rows (invisible to
// readers, finished by the replay), never index rows without records (a corrupt page).
func TestPutWritesEveryRecordBeforeAnyIndexRow(t *testing.T) {
	ctx := testCtx(t)
	st := migrated(t)
	rows := rowsOf(t, 5, 1, 2, 3)
	st.between = func() error { return errors.New("injected: crashed between the phases") }
	if _, err := st.Put(ctx, rows, time.Now()); err == nil {
		t.Fatal("Put with a crash between its phases succeeded")
	}
	got, _, err := st.Range(ctx, rows[0].Tenant, rows[0].Conversation, 0, 10, 100)
	if err != nil || len(got) != 0 {
		t.Fatalf("after a crash between the phases Range = %d messages, %v; want an empty, valid page", len(got), err)
	}
	st.between = nil
	if _, err := st.Put(ctx, rows, time.Now()); err != nil { // the archiver's replay
		t.Fatal(err)
	}
	if got, _, err = st.Range(ctx, rows[0].Tenant, rows[0].Conversation, 0, 10, 100); err != nil || len(got) != 3 {
		t.Fatalf("after the replay Range = %d messages, %v; want 3", len(got), err)
	}
}
