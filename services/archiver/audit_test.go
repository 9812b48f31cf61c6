package archiver

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/cqlstore"
)

func auditNow(t *testing.T, cfg Config) AuditResult {
	t.Helper()
	res, err := Audit(testCtx(t), AuditConfig{KafkaBrokers: cfg.KafkaBrokers, OutboxTopic: cfg.OutboxTopic,
		CQL: MigrateConfig{Hosts: cfg.CQLHosts, Keyspace: cfg.CQLKeyspace}, From: -1, To: -1})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// The audit is an independent read of the archive against the Outbox: it must see messages
// committed while the archiver was stopped, and an archived position overwritten by another
// message, and pass only once the archive holds exactly what was committed.
func TestAuditFindsWhatTheArchiveDoesNotHold(t *testing.T) {
	topic := privateOutbox(t)
	cfg := testConfig(t, topic)
	produceMessages(t, topic, 200, 5)
	r := start(t, cfg)
	r.waitPosition(t, 200)
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if res := auditNow(t, cfg); !res.Passed() || res.Records != 200 || res.Messages != 200 || res.Archived != 200 ||
		res.Conversations != 5 {
		t.Fatalf("audit of a complete archive = %+v, want 200 archived in 5 conversations, passed", res)
	}
	// Committed while the archiver is down: the audit must count them missing.
	keys, values := make([][]byte, 3), make([][]byte, 3)
	for i := range 3 {
		keys[i], values[i] = envelope(t, 0, uint64(41+i), "while the archiver was down")
	}
	produce(t, topic, keys, values)
	if res := auditNow(t, cfg); res.Passed() || res.Missing != 3 || res.Archived != 200 {
		t.Fatalf("audit with 3 unarchived = %+v, want 3 missing", res)
	}
	r2 := start(t, cfg)
	r2.waitPosition(t, 203)
	if res := auditNow(t, cfg); !res.Passed() || res.Archived != 203 {
		t.Fatalf("audit after the archiver caught up = %+v, want 203 archived", res)
	}
	// Another message at an archived position (seq reuse across batches): a plain INSERT
	// overwrites, so the audit must see both the Outbox's reuse and the archive's mismatch.
	time.Sleep(2 * time.Millisecond) // a new message id time
	k, v := envelope(t, 1, 1, "another message at seq 1")
	produce(t, topic, [][]byte{k}, [][]byte{v})
	r2.waitPosition(t, 204)
	reused := auditNow(t, cfg)
	if reused.Passed() || reused.Reused != 1 {
		t.Fatalf("audit after a reused seq = %+v, want it to fail with 1 reused position", reused)
	}
	// The archive alone overwritten (the Outbox is right): a mismatch.
	time.Sleep(2 * time.Millisecond)
	_, v = envelope(t, 2, 1, "written around the archiver")
	var env internalv1.CommittedEnvelope
	if err := proto.Unmarshal(v, &env); err != nil {
		t.Fatal(err)
	}
	row, err := cqlstore.RowFromRecord(env.GetRecord())
	if err != nil {
		t.Fatal(err)
	}
	st, err := cqlstore.Open(testCtx(t), cqlstore.Config{Hosts: cfg.CQLHosts, Keyspace: cfg.CQLKeyspace})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Put(testCtx(t), []cqlstore.Row{row}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if res := auditNow(t, cfg); res.Mismatch != reused.Mismatch+1 || res.Archived != reused.Archived-1 {
		t.Fatalf("audit after an overwritten archive row = %+v, want one more mismatch than %+v", res, reused)
	}
}
