package cqlstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Durability is what an acknowledged archive write is worth when a CQL node crashes: the
// keyspace's replication and, when a single replica holds each row, the node's commitlog_sync.
//
// Why it matters here: the hot-tier trim deletes a message from Redis once the archive
// acknowledged it (ADR-0022), so an acknowledgement that a crash can take back loses the only
// copy once the Outbox's retention passes. A replicated keyspace (RF ≥ 2, written at
// LOCAL_QUORUM) survives one node's crash whatever its commitlog mode. A single replica does
// only with commitlog_sync batch or group: in periodic mode (the default of Cassandra and
// ScyllaDB) a node that is SIGKILLed loses what it acknowledged since its last commitlog sync
// marker — the chaos cell cql-kill lost 3 and 6 acknowledged rows that way on Cassandra 5.0
// (docs/adr/0023-archive-durability.md).
type Durability struct {
	Keyspace string
	// MinReplicas is the smallest replication factor over the keyspace's data centres.
	MinReplicas int
	// CommitlogSync is the connected node's commitlog_sync; read only when MinReplicas is 1
	// ("" otherwise).
	CommitlogSync string
}

// DurabilityError: an acknowledged archive write might not survive a node crash; the archiver
// refuses to start (the writer refuses a Redis without appendfsync always for the same reason).
type DurabilityError struct {
	D      Durability
	Reason string
}

func (e *DurabilityError) Error() string {
	return fmt.Sprintf("cqlstore: keyspace %s: %s; acknowledged archive writes would not survive a node crash, and the hot-tier trim "+
		"deletes their Redis copy: replicate the keyspace (RF 3, `qimctl cql migrate --replication-factor 3` on a new keyspace, "+
		"or ALTER KEYSPACE) or set commitlog_sync: group (or batch) on every node", e.D.Keyspace, e.Reason)
}

// CheckDurability reads the keyspace's replication and, for a single replica, the node's
// commitlog_sync, and returns a *DurabilityError unless an acknowledged write survives a crash.
func (st *Store) CheckDurability(ctx context.Context) (Durability, error) {
	d := Durability{Keyspace: st.cfg.Keyspace}
	var repl map[string]string
	err := st.s.Query(`SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = ?`, st.cfg.Keyspace).
		WithContext(ctx).Scan(&repl)
	if err != nil {
		return d, fmt.Errorf("cqlstore: read the replication of keyspace %s: %w", st.cfg.Keyspace, err)
	}
	if d.MinReplicas, err = minReplicas(repl); err != nil {
		return d, fmt.Errorf("%w: keyspace %s: %w", ErrConfig, st.cfg.Keyspace, err)
	}
	if d.MinReplicas >= 2 {
		return d, nil
	}
	var readErr error
	d.CommitlogSync, readErr = st.commitlogSync(ctx)
	return d, d.judge(readErr)
}

// judge decides whether d survives a node crash; readErr is why the commitlog mode is unknown.
func (d Durability) judge(readErr error) error {
	switch {
	case d.MinReplicas >= 2:
		return nil
	case readErr != nil:
		return &DurabilityError{D: d, Reason: fmt.Sprintf("one replica, and the node's commitlog_sync could not be read (%v)", readErr)}
	case d.CommitlogSync == "batch" || d.CommitlogSync == "group":
		return nil
	default:
		return &DurabilityError{D: d, Reason: fmt.Sprintf("one replica on a node with commitlog_sync %q", d.CommitlogSync)}
	}
}

// commitlogSync reads the node's setting from Cassandra's system_views.settings (4.0+), then
// from ScyllaDB's system.config.
func (st *Store) commitlogSync(ctx context.Context) (string, error) {
	var v string
	err := st.s.Query(`SELECT value FROM system_views.settings WHERE name = 'commitlog_sync'`).WithContext(ctx).Scan(&v)
	if err == nil {
		return strings.ToLower(strings.TrimSpace(v)), nil
	}
	if err2 := st.s.Query(`SELECT value FROM system.config WHERE name = 'commitlog_sync'`).WithContext(ctx).Scan(&v); err2 != nil {
		return "", fmt.Errorf("system_views.settings: %v; system.config: %v", err, err2)
	}
	return strings.ToLower(strings.Trim(strings.TrimSpace(v), `"`)), nil
}

// minReplicas is the smallest factor of a system_schema.keyspaces replication map: SimpleStrategy
// has replication_factor, NetworkTopologyStrategy one entry per data centre. A factor may be
// written "3" or, with transient replicas, "3/1" (full replicas count: the transient ones do
// not keep the data).
func minReplicas(repl map[string]string) (int, error) {
	lowest := 0
	for k, v := range repl {
		if k == "class" {
			continue
		}
		full, transient, _ := strings.Cut(v, "/")
		n, err := strconv.Atoi(strings.TrimSpace(full))
		if err != nil {
			return 0, fmt.Errorf("replication %q = %q is not a factor", k, v)
		}
		if t, err := strconv.Atoi(strings.TrimSpace(transient)); err == nil {
			n -= t
		}
		if lowest == 0 || n < lowest {
			lowest = n
		}
	}
	if lowest == 0 {
		return 0, fmt.Errorf("replication %v names no factor", repl)
	}
	return lowest, nil
}
