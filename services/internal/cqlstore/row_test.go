package cqlstore

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

func id16(b byte) []byte {
	out := make([]byte, 16)
	out[15] = b
	return out
}

func validRecord() *internalv1.MessageRecord {
	return &internalv1.MessageRecord{TenantId: id16(1), ConversationId: id16(2), ConversationSeq: 7, MessageId: id16(3),
		SenderUserId: 42, MessageType: 1, Body: []byte("hi"), CreatedAtMs: 1_700_000_000_000}
}

func TestRowFromRecordRefusesWhatNoPageCanServe(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*internalv1.MessageRecord)
	}{
		{"short tenant", func(r *internalv1.MessageRecord) { r.TenantId = []byte{1} }},
		{"no conversation", func(r *internalv1.MessageRecord) { r.ConversationId = nil }},
		{"long message id", func(r *internalv1.MessageRecord) { r.MessageId = make([]byte, 17) }},
		{"seq 0", func(r *internalv1.MessageRecord) { r.ConversationSeq = 0 }},
		{"seq with bit 63", func(r *internalv1.MessageRecord) { r.ConversationSeq = math.MaxInt64 + 1 }},
		{"no commit time", func(r *internalv1.MessageRecord) { r.CreatedAtMs = 0 }},
		{"no sender", func(r *internalv1.MessageRecord) { r.SenderUserId = 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := validRecord()
			tc.edit(rec)
			if _, err := RowFromRecord(rec); !errors.Is(err, ErrInvalid) {
				t.Fatalf("RowFromRecord = %v, want ErrInvalid", err)
			}
		})
	}
	row, err := RowFromRecord(validRecord())
	if err != nil {
		t.Fatal(err)
	}
	if row.Seq != 7 || row.Bucket() != 0 || row.Sender != 42 || len(row.Record) == 0 {
		t.Fatalf("row = %+v", row)
	}
	rec := validRecord()
	rec.ConversationSeq = 3*contract.MessageSeqBucketWidth + 5
	if row, _ := RowFromRecord(rec); row.Bucket() != 3 {
		t.Fatalf("seq %d in bucket %d, want 3", rec.ConversationSeq, row.Bucket())
	}
}

func TestRowTTLFollowsTheRetentionClassFromCommitTime(t *testing.T) {
	created := time.UnixMilli(1_700_000_000_000)
	for _, tc := range []struct {
		name        string
		class       contract.RetentionClass
		now         time.Time
		ttl         int
		wantExpired bool
	}{
		{"default, archived at once", contract.RetentionDefault, created, int(contract.HistoryRetention / time.Second), false},
		{"default, archived a day late", contract.RetentionDefault, created.Add(24 * time.Hour),
			int((contract.HistoryRetention - 24*time.Hour) / time.Second), false},
		{"default, part second rounds up", contract.RetentionDefault, created.Add(contract.HistoryRetention - 300*time.Millisecond), 1, false},
		{"default, past retention", contract.RetentionDefault, created.Add(contract.HistoryRetention), 0, true},
		{"ephemeral", contract.RetentionEphemeral24h, created.Add(time.Hour), int(23 * time.Hour / time.Second), false},
		{"ephemeral, late", contract.RetentionEphemeral24h, created.Add(25 * time.Hour), 0, true},
		{"compliance hold never expires", contract.RetentionComplianceHold, created.Add(10 * 365 * 24 * time.Hour), 0, false},
		{"unknown class never guessed", contract.RetentionClass(99), created.Add(10 * 365 * 24 * time.Hour), 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Row{CreatedAtMs: created.UnixMilli(), Retention: tc.class}
			ttl, expired := r.TTL(tc.now)
			if ttl != tc.ttl || expired != tc.wantExpired {
				t.Fatalf("TTL = %d, expired %v; want %d, %v", ttl, expired, tc.ttl, tc.wantExpired)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"defaults", Config{Hosts: []string{"127.0.0.1:9042"}}, true},
		{"no host", Config{}, false},
		{"host without port", Config{Hosts: []string{"localhost"}}, false},
		{"keyspace with a quote", Config{Hosts: []string{"h:1"}, Keyspace: "qim'; DROP"}, false},
		{"upper-case keyspace", Config{Hosts: []string{"h:1"}, Keyspace: "Qim"}, false},
		{"concurrency too high", Config{Hosts: []string{"h:1"}, Concurrency: maxConcurrency + 1}, false},
		{"negative timeout", Config{Hosts: []string{"h:1"}, Timeout: -time.Second}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrConfig)) {
				t.Fatalf("Validate = %v, want ok=%v", err, tc.ok)
			}
			if tc.ok && (tc.cfg.Keyspace != DefaultKeyspace || tc.cfg.Concurrency != DefaultConcurrency || tc.cfg.Timeout != DefaultTimeout) {
				t.Fatalf("defaults not filled: %+v", tc.cfg)
			}
		})
	}
}

func TestMigrationsAreOrderedAndIdempotentStatements(t *testing.T) {
	for i, m := range migrations {
		if m.version != i+1 {
			t.Fatalf("migration %d has version %d: versions must be 1, 2, … in order", i, m.version)
		}
		for _, st := range m.stmts {
			if !containsFold(st, "IF NOT EXISTS") {
				t.Errorf("migration %d: %q is not idempotent (IF NOT EXISTS)", m.version, firstLine(st))
			}
			if containsFold(st, "DELETE") || containsFold(st, " IF EXISTS") {
				t.Errorf("migration %d: %q deletes or uses a condition", m.version, firstLine(st))
			}
		}
	}
}
