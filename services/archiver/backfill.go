package archiver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/proto"

	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/cqlstore"
	"github.com/qim-dev/qim/services/internal/msgstore"
)

// BackfillConfig says which hot tier to copy into which archive (`qimctl history backfill`).
type BackfillConfig struct {
	RedisAddr string // the core Redis holding the hot history
	RedisDB   int    // its logical database (0 in every deployment)
	RedisAuth RedisAuth
	CQL       MigrateConfig
	// ScanCount is SCAN's COUNT hint: keys per step, default 1000. One step is one archive batch.
	ScanCount int64
	// Progress, when set, is called after every step.
	Progress func(BackfillResult)
}

// BackfillResult counts what a backfill did.
type BackfillResult struct {
	Scanned    int // hot records read
	Archived   int // rows written to the archive (record and index)
	Expired    int // records past their retention: not written
	Registered int // hot records that had no trim candidate and now have one
}

// Backfill copies every hot record of the core Redis into the archive and only then registers
// it for the hot-tier trim (ADR-0022): history committed before the trim existed, or older than
// the Outbox's retention (which the HistoryArchiver can no longer read), is otherwise never
// archived and never trimmed, and holds its conversation's hot floor. It is idempotent (plain
// INSERTs of the same rows; ZADD NX keeps a committed message's own candidate), so it can be run
// again after a failure or alongside the archiver. It fails closed: a record that does not
// decode, or names another seq than its key, stops it before anything of its step is written.
// Run it on a settled system: a commit still in flight is archived by its own path anyway.
func Backfill(ctx context.Context, c BackfillConfig) (BackfillResult, error) {
	if c.ScanCount <= 0 {
		c.ScanCount = 1000
	}
	ropts := &redis.Options{Addr: c.RedisAddr, DB: c.RedisDB}
	if err := c.RedisAuth.Apply(ropts); err != nil {
		return BackfillResult{}, fmt.Errorf("archiver: backfill: %w", err)
	}
	rdb := redis.NewClient(ropts)
	defer rdb.Close()
	st, err := cqlstore.Open(ctx, cqlstore.Config{Hosts: c.CQL.Hosts, Keyspace: c.CQL.Keyspace, NoPeerDiscovery: c.CQL.NoPeerDiscovery, Auth: c.CQL.Auth})
	if err != nil {
		return BackfillResult{}, err
	}
	defer st.Close()
	hot := msgstore.New(rdb)
	var res BackfillResult
	for cursor := uint64(0); ; {
		recs, next, err := hot.ScanHotRecords(ctx, cursor, c.ScanCount)
		if err != nil {
			return res, err
		}
		if err := backfillStep(ctx, st, hot, recs, &res); err != nil {
			return res, err
		}
		if c.Progress != nil {
			c.Progress(res)
		}
		if cursor = next; cursor == 0 {
			return res, nil
		}
	}
}

func backfillStep(ctx context.Context, st *cqlstore.Store, hot *msgstore.Store, recs []msgstore.HotRecord, res *BackfillResult) error {
	if len(recs) == 0 {
		return nil
	}
	rows := make([]cqlstore.Row, len(recs))
	keys, ats := make([]string, len(recs)), make([]int64, len(recs))
	for i, r := range recs {
		var rec internalv1.MessageRecord
		if err := proto.Unmarshal(r.Raw, &rec); err != nil {
			return fmt.Errorf("archiver: backfill: %s does not decode: %w", r.Key, errors.Join(ErrUndecodable, err))
		}
		row, err := cqlstore.RowFromRecord(&rec)
		if err != nil {
			return fmt.Errorf("archiver: backfill: %s: %w", r.Key, err)
		}
		if seq, err := msgstore.SeqOfHotKey(r.Key); err != nil || seq != row.Seq {
			return fmt.Errorf("archiver: backfill: %s holds the record of seq %d: %w", r.Key, row.Seq, ErrUndecodable)
		}
		rows[i], keys[i], ats[i] = row, r.Key, max(row.CreatedAtMs, 1)
	}
	put, err := st.Put(ctx, rows, time.Now())
	if err != nil {
		return fmt.Errorf("archiver: backfill: %w", err)
	}
	added, err := hot.RegisterForTrim(ctx, keys, ats)
	if err != nil {
		return err
	}
	res.Scanned += len(recs)
	res.Archived += put.Written
	res.Expired += put.Expired
	res.Registered += added
	return nil
}
