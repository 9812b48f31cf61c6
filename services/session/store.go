package session

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/keyfamily"
	"github.com/qim-dev/qim/services/internal/luascript"
)

// Storage key prefixes: storage names of this package, not contract constants. Layout (tenant as
// 32 lowercase hex digits, user and numbers in decimal, conversation ids as their 16 raw bytes):
//
//	qim:sess:list:<tenant>:<user>  zset  member = conversation id, score = time_ms of the latest
//	                                     activity's message_id (ZADD GT)
//	qim:read:<tenant>:<user>       hash  conversation id → read conversation_seq (only grows)
//	qim:sess:ckpt:<topic>          hash  cluster_id, topic_id, partitions, p:<partition> → next offset
//
// The gateway's session_epoch counters live under qim:sess:<tenant hex>:…; a 32-digit hex tenant
// never equals "list" or "ckpt", so the names cannot collide.
const (
	listPrefix = "qim:sess:list:"
	readPrefix = "qim:read:"
	ckptPrefix = "qim:sess:ckpt:"
	maxKeyLen  = 80
)

// KeyFamilies declares the keys this package writes (core Redis), for the redis-artifacts gate
// (inspect.RedisKeyFamilies). None expires: they are user state the projection writes once per
// record, so an expired key would silently lose rows or read state the log may no longer hold.
func KeyFamilies() []keyfamily.Family {
	const user, topic = `[0-9a-f]{32}:[0-9]+`, `[A-Za-z0-9._-]+`
	core, k := keyfamily.Core, userKey{contract.TenantID{Lo: 1}, 2}
	return []keyfamily.Family{
		keyfamily.New("session.list", core, "qim:sess:list:<tenant>:<user>", listPrefix, user).WithExample(listKey(k)).
			WithConversations(keyfamily.Conversations{In: keyfamily.ZSetMember, OfMember: keyfamily.RawConversation}).
			Permanent("a user's session list: each row is projected once, an expired list would lose conversations"),
		keyfamily.New("session.read", core, "qim:read:<tenant>:<user>", readPrefix, user).WithExample(readKey(k)).
			WithConversations(keyfamily.Conversations{In: keyfamily.HashField, OfMember: keyfamily.RawConversation}).
			Permanent("a user's read watermarks: expired, every conversation would count as unread again (invariant 10)"),
		keyfamily.New("session.prefs", core, "qim:prefs:<tenant>:<user>", prefsPrefix, user).WithExample(prefsKey(k)).
			Permanent("a user's settings (read receipts withheld): expired, a user's choice would be undone silently"),
		keyfamily.New("session.checkpoint", core, "qim:sess:ckpt:<topic>", ckptPrefix, topic).
			WithExample(ckptPrefix + contract.TopicDispatch).
			Permanent("one per topic: the projection's position in the dispatch log, bound to cluster and topic id"),
	}
}

// maxScore is the largest activity score: a message_id's time_ms has 48 bits, exact in a double.
const maxScore = 1<<48 - 1

// store is the session state in the core Redis.
type store struct {
	rdb    *redis.Client
	ckpt   string
	fields []string // checkpoint field per partition, built once
}

func newStore(rdb *redis.Client, topic string, partitions int) *store {
	s := &store{rdb: rdb, ckpt: ckptPrefix + topic, fields: make([]string, partitions)}
	for p := range s.fields {
		s.fields[p] = "p:" + strconv.Itoa(p)
	}
	return s
}

// appendUserKey appends prefix + "<tenant hex>:<user>" (no fmt on the hot path).
func appendUserKey(dst []byte, prefix string, k userKey) []byte {
	dst = append(dst, prefix...)
	t := k.tenant.Bytes()
	dst = hex.AppendEncode(dst, t[:])
	dst = append(dst, ':')
	return strconv.AppendUint(dst, uint64(k.user), 10)
}

func listKey(k userKey) string {
	return string(appendUserKey(make([]byte, 0, maxKeyLen), listPrefix, k))
}
func readKey(k userKey) string {
	return string(appendUserKey(make([]byte, 0, maxKeyLen), readPrefix, k))
}

func member(c contract.ConversationID) string {
	b := c.Bytes()
	return string(b[:])
}

// binding is what a topic's checkpoints are valid for.
type binding struct {
	cluster    string
	topicID    string // 32 hex digits
	partitions int
}

// bind stores live as the binding when none exists and returns what is stored.
func (s *store) bind(ctx context.Context, live binding) (binding, bool, error) {
	cmds, err := runCalls(ctx, s.rdb, []call{scripts.bind.Call(&bindArgs{Checkpoint: s.ckpt,
		ClusterID: live.cluster, TopicID: live.topicID, Partitions: live.partitions})})
	if err != nil {
		return binding{}, false, err
	}
	v, err := scripts.bind.Decode(cmds[0])
	switch {
	case errors.Is(err, luascript.ErrReplyShape):
		return binding{}, false, fmt.Errorf("%w: bind: %v", ErrCorruptState, err)
	case err != nil:
		return binding{}, false, s.scriptErr("bind", err)
	}
	parts, perr := strconv.Atoi(v.Partitions)
	if perr != nil {
		return binding{}, false, fmt.Errorf("%w: stored partition count %v", ErrCorruptState, v.Partitions)
	}
	return binding{cluster: v.ClusterID, topicID: v.TopicID, partitions: parts}, v.Fresh == 1, nil
}

// checkpoints returns the stored next offset of every partition, -1 where none is stored.
func (s *store) checkpoints(ctx context.Context) ([]int64, error) {
	vals, err := s.rdb.HMGet(ctx, s.ckpt, s.fields...).Result()
	if err != nil {
		return nil, fmt.Errorf("session: read checkpoints: %w", err)
	}
	out := make([]int64, len(vals))
	for p, v := range vals {
		out[p] = -1
		if v == nil {
			continue
		}
		str, _ := v.(string)
		n, err := strconv.ParseInt(str, 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%w: checkpoint of partition %d is %q", ErrCorruptState, p, str)
		}
		out[p] = n
	}
	return out, nil
}

func (s *store) scriptErr(op string, err error) error {
	class, detail := scriptClass(err)
	switch class {
	case "QIMCORRUPT":
		return fmt.Errorf("%w: %s: %s", ErrCorruptState, op, detail)
	case "QIMINVAL":
		return fmt.Errorf("session: %s: invalid argument: %s", op, detail)
	}
	return fmt.Errorf("session: %s: %w", op, err)
}

// listAll reads a user's whole list in list order (activity descending, then conversation id
// descending: ZREVRANGE's order for equal scores).
func (s *store) listAll(ctx context.Context, k userKey) ([]row, error) {
	zs, err := s.rdb.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{Key: listKey(k), Start: 0, Stop: -1, Rev: true}).Result()
	if err != nil {
		return nil, fmt.Errorf("session: read list: %w", err)
	}
	rows := make([]row, len(zs))
	for i, z := range zs {
		m, _ := z.Member.(string)
		if rows[i], err = parseRow(m, z.Score); err != nil {
			return nil, err
		}
	}
	return rows, nil
}

// scores reads the current activity of convs in a user's list; ok[i] is false for a
// conversation that is not in it.
func (s *store) scores(ctx context.Context, k userKey, convs []contract.ConversationID) ([]row, []bool, error) {
	ms := make([]string, len(convs))
	for i, c := range convs {
		ms[i] = member(c)
	}
	vals, err := s.rdb.ZMScore(ctx, listKey(k), ms...).Result()
	if err != nil {
		return nil, nil, fmt.Errorf("session: read list scores: %w", err)
	}
	rows, ok := make([]row, len(convs)), make([]bool, len(convs))
	for i, v := range vals {
		if v == 0 { // go-redis maps a missing member to 0; a real score is a time_ms, never 0
			continue
		}
		if rows[i], err = parseRow(ms[i], v); err != nil {
			return nil, nil, err
		}
		ok[i] = true
	}
	return rows, ok, nil
}

func parseRow(m string, score float64) (row, error) {
	c, err := contract.ParseConversationID([]byte(m))
	if err != nil || score < 1 || score > maxScore || score != math.Trunc(score) {
		return row{}, fmt.Errorf("%w: session list member of %d bytes with score %v", ErrCorruptState, len(m), score)
	}
	return row{score: uint64(score), conv: c}, nil
}

// readSeqs reads a user's read watermarks of convs (0 where none). It is one HMGET, never an
// HGET with a field list: a client library that sends HGET for a single field answers nil for a
// missing one, and whole refreshes were lost to that
// (docs/adr/0010-session-snapshot-dirty-markers.md).
func (s *store) readSeqs(ctx context.Context, k userKey, convs []contract.ConversationID) ([]uint64, error) {
	fields := make([]string, len(convs))
	for i, c := range convs {
		fields[i] = member(c)
	}
	vals, err := s.rdb.HMGet(ctx, readKey(k), fields...).Result()
	if err != nil {
		return nil, fmt.Errorf("session: read watermarks: %w", err)
	}
	if len(vals) != len(convs) {
		return nil, fmt.Errorf("%w: HMGET answered %d values for %d fields", ErrCorruptState, len(vals), len(convs))
	}
	out := make([]uint64, len(convs))
	for i, v := range vals {
		if out[i], err = watermark(v, "read watermark"); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// inList reports whether conv is in the user's list.
func (s *store) inList(ctx context.Context, k userKey, conv contract.ConversationID) (bool, error) {
	err := s.rdb.ZScore(ctx, listKey(k), member(conv)).Err()
	switch {
	case errors.Is(err, redis.Nil):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("session: read list: %w", err)
	}
	return true, nil
}

// markRead stores max(read, seq) and returns the stored watermark.
func (s *store) markRead(ctx context.Context, k userKey, conv contract.ConversationID, seq uint64) (uint64, error) {
	cmds, err := runCalls(ctx, s.rdb, []call{scripts.markRead.Call(&markReadArgs{Read: readKey(k),
		Member: member(conv), Seq: strconv.FormatUint(seq, 10)})})
	if err != nil {
		return 0, err
	}
	v, err := scripts.markRead.Decode(cmds[0])
	switch {
	case errors.Is(err, luascript.ErrReplyShape):
		return 0, fmt.Errorf("%w: mark_read: %v", ErrCorruptState, err)
	case err != nil:
		return 0, s.scriptErr("mark_read", err)
	}
	n, err := strconv.ParseUint(v.Watermark, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: mark_read answered %q", ErrCorruptState, v.Watermark)
	}
	return n, nil
}
