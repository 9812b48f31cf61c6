package msgstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// HotRecord is one record of the hot tier as a scan finds it.
type HotRecord struct {
	Key string // its qim:hrec:… key
	Raw []byte // the complete MessageRecord
}

// ScanHotRecords reads one SCAN step of the hot records (count is SCAN's hint) and their bytes
// with one MGET, for the backfill. next is 0 when the scan is complete. A key that vanished
// between SCAN and MGET (trimmed) is left out: it is in the archive already.
func (s *Store) ScanHotRecords(ctx context.Context, cursor uint64, count int64) (recs []HotRecord, next uint64, err error) {
	keys, next, err := s.rdb.Scan(ctx, cursor, hrecPrefix+"*", count).Result()
	if err != nil {
		return nil, 0, fmt.Errorf("msgstore: scan hot records: %w", err)
	}
	if len(keys) == 0 {
		return nil, next, nil
	}
	vals, err := s.rdb.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, 0, fmt.Errorf("msgstore: read hot records: %w", err)
	}
	for i, v := range vals {
		if sv, ok := v.(string); ok {
			recs = append(recs, HotRecord{Key: keys[i], Raw: []byte(sv)})
		}
	}
	return recs, next, nil
}

// RegisterForTrim gives each hot record key a trim candidate scored atMs[i] unless it has one
// (ZADD NX: a committed message keeps the committed_at its commit registered), in one pipeline,
// and returns how many it added. Call it only for records already in the archive: the trim may
// then remove them once the cutoff passes atMs (the backfill's promise, ADR-0022).
func (s *Store) RegisterForTrim(ctx context.Context, keys []string, atMs []int64) (int, error) {
	if len(keys) != len(atMs) {
		return 0, fmt.Errorf("msgstore: register for trim: %w: %d keys, %d times", ErrInvalidArgument, len(keys), len(atMs))
	}
	cmds := make([]*redis.IntCmd, len(keys))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			tag, member, ok := strings.Cut(strings.TrimPrefix(k, hrecPrefix), ":")
			if !ok || !strings.HasPrefix(k, hrecPrefix) {
				return fmt.Errorf("msgstore: register for trim: %w: %q is not a hot record key", ErrInvalidArgument, k)
			}
			cmds[i] = p.ZAddNX(ctx, htrimPrefix+tag, redis.Z{Score: float64(atMs[i]), Member: member})
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("msgstore: register for trim: %w", err)
	}
	added := 0
	for _, c := range cmds {
		added += int(c.Val())
	}
	return added, nil
}

// SeqOfHotKey is the conversation_seq a hot record key names (for checks against its record).
func SeqOfHotKey(key string) (uint64, error) {
	i := strings.LastIndexByte(key, ':')
	if i < 0 || !strings.HasPrefix(key, hrecPrefix) {
		return 0, fmt.Errorf("msgstore: %w: %q is not a hot record key", ErrInvalidArgument, key)
	}
	return strconv.ParseUint(key[i+1:], 10, 64)
}
