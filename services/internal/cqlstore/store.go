package cqlstore

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocql/gocql"

	"github.com/qim-dev/qim/services/internal/failpoint"
)

// Store is an open archive: one gocql session on the keyspace, statements prepared on first use
// (gocql prepares every statement with bind values once per connection and caches it).
//
// Invariants: every write is at LOCAL_QUORUM and marked idempotent (same key, same values), so a
// timed-out statement may be retried by anyone; Put writes the records of a batch before any of
// its index rows and returns nil only when every statement was acknowledged.
//
// How: one fixed pool of at most Concurrency goroutines per Put phase, pulling rows by an atomic
// index, so a batch costs a bounded number of goroutines, not one per row.
//
// Rejected: a logged BATCH per archiver batch (its batchlog is a second write on two extra
// replicas, for an atomicity the record-before-index order and idempotent replay already give)
// and an unlogged multi-partition BATCH (the coordinator fans it out itself, so it saves client
// round trips at the price of coordinator memory and one slow partition holding up the rest).
type Store struct {
	cfg Config
	s   *gocql.Session

	insRecord, insIndex string

	// between runs after the first phase of Put and before the second (tests: a crash there);
	// nil in production.
	between func() error
}

func newCluster(cfg Config, keyspace string) (*gocql.ClusterConfig, error) {
	c := gocql.NewCluster(cfg.Hosts...)
	if err := cfg.Auth.Apply(c); err != nil {
		return nil, fmt.Errorf("cqlstore: %w", err)
	}
	c.ProtoVersion = 4 // what Cassandra 4/5 and ScyllaDB all speak; v5 is Cassandra-only
	c.Keyspace = keyspace
	c.Consistency = gocql.LocalQuorum
	c.SerialConsistency = gocql.LocalSerial
	c.Timeout = cfg.Timeout
	c.ConnectTimeout = cfg.Timeout
	c.DisableInitialHostLookup = cfg.NoPeerDiscovery
	c.PoolConfig.HostSelectionPolicy = gocql.TokenAwareHostPolicy(gocql.RoundRobinHostPolicy())
	c.Logger = quiet{}
	return c, nil
}

// Open connects to the keyspace and refuses one whose schema is not SchemaVersion
// (*SchemaError naming `qimctl cql migrate`).
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cluster, err := newCluster(cfg, cfg.Keyspace)
	if err != nil {
		return nil, err
	}
	s, err := cluster.CreateSession()
	if err != nil {
		return nil, fmt.Errorf("cqlstore: connect to keyspace %s at %v: %w (run `qimctl cql migrate` if it does not exist)",
			cfg.Keyspace, cfg.Hosts, err)
	}
	if err := checkSchema(ctx, s, cfg.Keyspace); err != nil {
		s.Close()
		return nil, err
	}
	return &Store{cfg: cfg, s: s,
		insRecord: `INSERT INTO message_record (tenant_id, conversation_id, seq_bucket, conversation_seq, message_id, record)
			VALUES (?, ?, ?, ?, ?, ?) USING TTL ?`,
		insIndex: `INSERT INTO history_index (tenant_id, conversation_id, seq_bucket, conversation_seq, message_id,
			sender_user_id, message_type, flags, created_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) USING TTL ?`,
	}, nil
}

// Close releases the session.
func (st *Store) Close() { st.s.Close() }

// Ping runs one cheap read on the keyspace's own table (readiness).
func (st *Store) Ping(ctx context.Context) error {
	var v int
	err := st.s.Query(`SELECT version FROM schema_migrations LIMIT 1`).WithContext(ctx).Scan(&v)
	if err != nil {
		return fmt.Errorf("cqlstore: ping %s: %w", st.cfg.Keyspace, err)
	}
	return nil
}

// PutResult counts what Put did.
type PutResult struct {
	Written int // rows written (record and index)
	Expired int // rows whose retention had already ended at now: not written
}

// Put archives rows: every message_record first, then every history_index row, all at
// LOCAL_QUORUM. Any failure returns an error and the caller must replay the whole batch (the
// writes are idempotent). now fixes each row's remaining TTL.
func (st *Store) Put(ctx context.Context, rows []Row, now time.Time) (PutResult, error) {
	live := make([]Row, 0, len(rows))
	ttls := make([]int, 0, len(rows))
	var res PutResult
	for i := range rows {
		ttl, expired := rows[i].TTL(now)
		if expired {
			res.Expired++
			continue
		}
		live, ttls = append(live, rows[i]), append(ttls, ttl)
	}
	err := st.each(ctx, len(live), func(ctx context.Context, i int) error {
		r := &live[i]
		t, c, m := r.Tenant.Bytes(), r.Conversation.Bytes(), r.MessageID.Bytes()
		return st.s.Query(st.insRecord, t[:], c[:], r.Bucket(), int64(r.Seq), m[:], r.Record, ttls[i]).
			WithContext(ctx).Idempotent(true).Exec()
	})
	if err != nil {
		return res, fmt.Errorf("cqlstore: write message_record: %w", err)
	}
	failpoint.Hit(failpoint.ArchiverBetweenRecordAndIndex)
	if st.between != nil {
		if err := st.between(); err != nil {
			return res, err
		}
	}
	err = st.each(ctx, len(live), func(ctx context.Context, i int) error {
		r := &live[i]
		t, c, m := r.Tenant.Bytes(), r.Conversation.Bytes(), r.MessageID.Bytes()
		return st.s.Query(st.insIndex, t[:], c[:], r.Bucket(), int64(r.Seq), m[:], int64(r.Sender),
			int32(r.MessageType), int32(r.Flags), r.CreatedAtMs, ttls[i]).WithContext(ctx).Idempotent(true).Exec()
	})
	if err != nil {
		return res, fmt.Errorf("cqlstore: write history_index: %w", err)
	}
	res.Written = len(live)
	return res, nil
}

// each runs fn(0..n-1) on at most Concurrency goroutines and returns the first error; after an
// error the remaining indexes are not started.
func (st *Store) each(ctx context.Context, n int, fn func(context.Context, int) error) error {
	if n == 0 {
		return nil
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(n, st.cfg.Concurrency) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(ctx, i); err != nil {
					cancel(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return context.Cause(ctx)
}

// quiet drops gocql's own log lines (reconnect chatter); errors reach callers as values.
type quiet struct{}

func (quiet) Print(...any)          {}
func (quiet) Printf(string, ...any) {}
func (quiet) Println(...any)        {}
