package cqlstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gocql/gocql"
)

// migration is one schema version: statements that are each idempotent (IF NOT EXISTS), so a
// migration that died half way is finished by running it again. {ks} stands for the keyspace.
type migration struct {
	version     int
	description string
	stmts       []string
}

// migrations are the schema's history, oldest first. Never edit a released one: add a version.
//
// u64 values are bigint with bit 63 always zero (asserted when rows are built), so CQL's signed
// clustering order equals the unsigned order. u128 ids are 16-byte big-endian blobs.
var migrations = []migration{{
	version:     1,
	description: "message_record and history_index, partitioned by (tenant, conversation, seq_bucket)",
	stmts: []string{
		`CREATE TABLE IF NOT EXISTS {ks}.schema_migrations (
			version int PRIMARY KEY, description text, applied_at timestamp)`,
		// No table-level TTL: retention is per row (USING TTL), and a compliance hold has none.
		`CREATE TABLE IF NOT EXISTS {ks}.message_record (
			tenant_id blob, conversation_id blob, seq_bucket bigint, conversation_seq bigint,
			message_id blob, record blob,
			PRIMARY KEY ((tenant_id, conversation_id, seq_bucket), conversation_seq))
			WITH CLUSTERING ORDER BY (conversation_seq ASC) AND default_time_to_live = 0`,
		// The index answers "which seqs exist, from whom" (history pages, unread) without reading
		// bodies; a row here whose record is missing is corruption.
		`CREATE TABLE IF NOT EXISTS {ks}.history_index (
			tenant_id blob, conversation_id blob, seq_bucket bigint, conversation_seq bigint,
			message_id blob, sender_user_id bigint, message_type int, flags int, created_at_ms bigint,
			PRIMARY KEY ((tenant_id, conversation_id, seq_bucket), conversation_seq))
			WITH CLUSTERING ORDER BY (conversation_seq ASC) AND default_time_to_live = 0`,
	},
}}

// SchemaVersion is the version this binary reads and writes.
func SchemaVersion() int { return migrations[len(migrations)-1].version }

// MigrateOptions say how to create the keyspace when it does not exist yet.
type MigrateOptions struct {
	// ReplicationFactor of a new keyspace, per datacenter; 3 in production (LOCAL_QUORUM then
	// survives one replica down). An existing keyspace's replication is never changed here.
	ReplicationFactor int
	// Datacenter of a new keyspace; "" takes the contact node's own datacenter.
	Datacenter string
}

// Migrate brings the keyspace to SchemaVersion and returns the versions it applied (none when
// it was current). It is safe to run any number of times and concurrently with a running
// archiver. A keyspace at a newer version than this binary's is refused (*SchemaError).
func Migrate(ctx context.Context, cfg Config, opts MigrateOptions) ([]int, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if opts.ReplicationFactor < 1 {
		return nil, fmt.Errorf("%w: replication factor %d", ErrConfig, opts.ReplicationFactor)
	}
	cluster, err := newCluster(cfg, "")
	if err != nil {
		return nil, err
	}
	s, err := cluster.CreateSession()
	if err != nil {
		return nil, fmt.Errorf("cqlstore: connect to %v: %w", cfg.Hosts, err)
	}
	defer s.Close()
	if err := createKeyspace(ctx, s, cfg.Keyspace, opts); err != nil {
		return nil, err
	}
	// Bootstrap: the table that records versions is itself created by migration 1.
	if err := exec(ctx, s, cfg.Keyspace, migrations[0].stmts[0]); err != nil {
		return nil, err
	}
	have, err := appliedVersions(ctx, s, cfg.Keyspace)
	if err != nil {
		return nil, err
	}
	if top := maxVersion(have); top > SchemaVersion() {
		return nil, &SchemaError{Keyspace: cfg.Keyspace, Want: SchemaVersion(), Have: top}
	}
	var applied []int
	for _, m := range migrations {
		if have[m.version] {
			continue
		}
		for _, st := range m.stmts {
			if err := exec(ctx, s, cfg.Keyspace, st); err != nil {
				return applied, fmt.Errorf("cqlstore: migration %d: %w", m.version, err)
			}
		}
		q := s.Query(`INSERT INTO `+cfg.Keyspace+`.schema_migrations (version, description, applied_at) VALUES (?, ?, ?)`,
			m.version, m.description, time.Now()).WithContext(ctx)
		if err := q.Exec(); err != nil {
			return applied, fmt.Errorf("cqlstore: record migration %d: %w", m.version, err)
		}
		applied = append(applied, m.version)
	}
	return applied, nil
}

func createKeyspace(ctx context.Context, s *gocql.Session, ks string, opts MigrateOptions) error {
	dc := opts.Datacenter
	if dc == "" {
		if err := s.Query(`SELECT data_center FROM system.local`).WithContext(ctx).Scan(&dc); err != nil {
			return fmt.Errorf("cqlstore: read the contact node's datacenter: %w", err)
		}
	}
	if strings.ContainsAny(dc, `'\`) {
		return fmt.Errorf("%w: datacenter name %q", ErrConfig, dc)
	}
	st := fmt.Sprintf(`CREATE KEYSPACE IF NOT EXISTS %s WITH replication = {'class': 'NetworkTopologyStrategy', '%s': %d} AND durable_writes = true`,
		ks, dc, opts.ReplicationFactor)
	if err := s.Query(st).WithContext(ctx).Exec(); err != nil {
		return fmt.Errorf("cqlstore: create keyspace %s: %w", ks, err)
	}
	return nil
}

func exec(ctx context.Context, s *gocql.Session, ks, stmt string) error {
	st := strings.ReplaceAll(stmt, "{ks}", ks)
	if err := s.Query(st).WithContext(ctx).Exec(); err != nil {
		return fmt.Errorf("cqlstore: %s: %w", firstLine(st), err)
	}
	return nil
}

func appliedVersions(ctx context.Context, s *gocql.Session, ks string) (map[int]bool, error) {
	it := s.Query(`SELECT version FROM ` + ks + `.schema_migrations`).WithContext(ctx).Iter()
	have := map[int]bool{}
	var v int
	for it.Scan(&v) {
		have[v] = true
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("cqlstore: read %s.schema_migrations: %w", ks, err)
	}
	return have, nil
}

// checkSchema refuses a keyspace that is not exactly at SchemaVersion.
func checkSchema(ctx context.Context, s *gocql.Session, ks string) error {
	have, err := appliedVersions(ctx, s, ks)
	if err != nil {
		return fmt.Errorf("%w (run `qimctl cql migrate`)", err)
	}
	top := maxVersion(have)
	if top != SchemaVersion() || len(have) != len(migrations) {
		return &SchemaError{Keyspace: ks, Want: SchemaVersion(), Have: top}
	}
	return nil
}

func maxVersion(have map[int]bool) int {
	top := 0
	for v := range have {
		top = max(top, v)
	}
	return top
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
