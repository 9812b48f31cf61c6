package archiver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/commitlog"
	"github.com/qim-dev/qim/services/internal/cqlstore"
)

// AuditConfig says which Outbox range to hold against which archive (`qimctl audit archive`).
type AuditConfig struct {
	KafkaBrokers []string
	KafkaAuth    KafkaAuth
	OutboxTopic  string // "" = contract.TopicOutbox
	CQL          MigrateConfig
	// From and To bound the Outbox offsets audited, [From, To); -1 means the log's start and
	// its end when the audit begins.
	From, To int64
}

// AuditResult counts what the archive holds of every committed message in the range. Missing,
// Mismatch and Reused must be 0 for a pass.
type AuditResult struct {
	From, To      int64
	Records       int // Outbox records read
	Messages      int // distinct (conversation, seq) positions among them
	Conversations int
	Archived      int // positions whose archive rows hold the Outbox's message
	Expired       int // positions past their retention: absent by design, not checked
	Missing       int // committed, not in the archive (or indexed without its record: a read error)
	Mismatch      int // the archive holds another message at the position
	Reused        int // the Outbox itself holds two contents for one position
	Extra         int // archived positions inside an audited conversation's span the range does not hold (information)
	// Findings are the first MaxAuditFindings missing or mismatched positions, for the operator
	// to look up (the Outbox offset finds the batch in the archiver's log).
	Findings []AuditFinding
}

// MaxAuditFindings bounds AuditResult.Findings.
const MaxAuditFindings = 20

// AuditFinding is one position the archive does not hold as the Outbox does.
type AuditFinding struct {
	Kind         string // "missing" or "mismatch"
	Conversation string // hex
	Seq          uint64
	Offset       int64 // the Outbox record that committed it
}

func (f AuditFinding) String() string {
	return fmt.Sprintf("%s: conversation %s seq %d (Outbox offset %d)", f.Kind, f.Conversation, f.Seq, f.Offset)
}

// auditRow is a position as the Outbox holds it, with the offset that holds it.
type auditRow struct {
	cqlstore.Row
	offset int64
}

// Passed reports whether nothing was lost, overwritten or reused.
func (r AuditResult) Passed() bool { return r.Missing == 0 && r.Mismatch == 0 && r.Reused == 0 }

type convKey struct {
	tenant contract.TenantID
	conv   contract.ConversationID
}

// Audit reads the Outbox range and checks each committed message's archive rows with
// cqlstore.Range, an independent read of what the archiver wrote. It fails closed: a record that
// does not decode, or an archive page that does not read, is an error, never a pass.
func Audit(ctx context.Context, c AuditConfig) (AuditResult, error) {
	if c.OutboxTopic == "" {
		c.OutboxTopic = contract.TopicOutbox
	}
	st, err := cqlstore.Open(ctx, cqlstore.Config{Hosts: c.CQL.Hosts, Keyspace: c.CQL.Keyspace, NoPeerDiscovery: c.CQL.NoPeerDiscovery, Auth: c.CQL.Auth})
	if err != nil {
		return AuditResult{}, err
	}
	defer st.Close()
	res, convs, err := readOutbox(ctx, c)
	if err != nil {
		return res, err
	}
	now := time.Now()
	for k, want := range convs {
		if err := auditConversation(ctx, st, k, want, now, &res); err != nil {
			return res, err
		}
	}
	res.Conversations = len(convs)
	return res, nil
}

// readOutbox collects every position of the range: conversation → seq → the row the Outbox holds.
func readOutbox(ctx context.Context, c AuditConfig) (AuditResult, map[convKey]map[uint64]auditRow, error) {
	var res AuditResult
	security, err := c.KafkaAuth.Opts()
	if err != nil {
		return res, nil, fmt.Errorf("archiver: audit: %w", err)
	}
	admin, err := commitlog.NewAdmin(c.KafkaBrokers, commitlog.AdminSecurity(security))
	if err != nil {
		return res, nil, err
	}
	defer admin.Close()
	wm, err := admin.Watermarks(ctx, c.OutboxTopic)
	if err != nil {
		return res, nil, err
	}
	b, ok := wm[outboxPartition]
	if !ok || len(wm) != 1 {
		return res, nil, &commitlog.PartitionCountError{Topic: c.OutboxTopic, Want: 1, Got: len(wm)}
	}
	res.From, res.To = c.From, c.To
	if res.From < 0 {
		res.From = b.Low
	}
	if res.To < 0 {
		res.To = b.High
	}
	if res.From < b.Low || res.To > b.High || res.From > res.To {
		return res, nil, fmt.Errorf("archiver: audit range [%d, %d) outside the Outbox [%d, %d)", res.From, res.To, b.Low, b.High)
	}
	convs := map[convKey]map[uint64]auditRow{}
	if res.From == res.To {
		return res, convs, nil
	}
	cons, err := commitlog.NewPartitionConsumer(c.KafkaBrokers, c.OutboxTopic, map[int32]int64{outboxPartition: res.From},
		commitlog.WithClientID("qim-audit-archive"), commitlog.WithSecurity(security))
	if err != nil {
		return res, nil, err
	}
	defer cons.Close()
	for next := res.From; next < res.To; {
		recs, err := cons.Poll(ctx, 0)
		for _, r := range recs {
			if r.Offset >= res.To {
				next = res.To // past the range (offsets may skip, e.g. over control records)
				break
			}
			next = r.Offset + 1
			res.Records++
			if err := collect(&res, convs, r); err != nil {
				return res, nil, err
			}
		}
		if err != nil {
			return res, nil, fmt.Errorf("archiver: audit read %s at %d: %w", c.OutboxTopic, next, err)
		}
	}
	return res, convs, nil
}

func collect(res *AuditResult, convs map[convKey]map[uint64]auditRow, r commitlog.Record) error {
	var env internalv1.CommittedEnvelope
	if err := proto.Unmarshal(r.Value, &env); err != nil || env.GetRecord() == nil {
		return fmt.Errorf("archiver: audit: Outbox offset %d is not a CommittedEnvelope: %w", r.Offset, errors.Join(ErrUndecodable, err))
	}
	row, err := cqlstore.RowFromRecord(env.GetRecord())
	if err != nil {
		return fmt.Errorf("archiver: audit: Outbox offset %d: %w", r.Offset, err)
	}
	k := convKey{row.Tenant, row.Conversation}
	m := convs[k]
	if m == nil {
		m = map[uint64]auditRow{}
		convs[k] = m
	}
	if prev, seen := m[row.Seq]; seen {
		if string(prev.Record) != string(row.Record) {
			res.Reused++
		}
		return nil
	}
	m[row.Seq] = auditRow{Row: row, offset: r.Offset}
	res.Messages++
	return nil
}
