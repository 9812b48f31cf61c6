package session

import (
	"context"
	"strconv"
	"strings"

	"github.com/qim-dev/qim/contract"
)

// applyCall projects one record: every list key gets the conversation, the read key (when the
// sender is among the recipients) gets max(read, seq), and the checkpoint moves prev → next.
type applyCall struct {
	part     int32
	offset   int64
	prev     string // "" = no checkpoint yet
	next     string
	score    uint64
	conv     contract.ConversationID
	lists    []string
	readKey  string // "" = none
	seq      uint64
	touching []userKey // recipients, for the dirty markers
}

// applyBatchMax bounds the records of one apply.lua call, so one call stays short on Redis (a
// script blocks every other client while it runs).
const applyBatchMax = 256

// apply runs the calls as apply.lua batches of at most applyBatchMax records, all in one
// pipeline, in order. It returns how many leading calls were applied and the error of the first
// batch that failed (a batch is refused whole, and every later one fails too or waits on the
// restart, because the process stops on the error).
func (s *store) apply(ctx context.Context, topicID string, cs []applyCall) (int, error) {
	var calls []call
	for lo := 0; lo < len(cs); lo += applyBatchMax {
		calls = append(calls, scripts.apply.Call(applyBatch(s.ckpt, s.fields, topicID, cs[lo:min(lo+applyBatchMax, len(cs))])))
	}
	cmds, err := runCalls(ctx, s.rdb, calls)
	if err != nil {
		return 0, err
	}
	for i, c := range cmds {
		if err := c.Err(); err != nil {
			lo := i * applyBatchMax
			return lo, s.applyErr(cs[lo:min(lo+applyBatchMax, len(cs))], err)
		}
	}
	return len(cs), nil
}

// applyBatch builds one apply.lua call; each key a record names is passed once.
func applyBatch(ckpt string, fields []string, topicID string, cs []applyCall) *applyArgs {
	a := &applyArgs{Checkpoint: ckpt, TopicID: topicID}
	at := map[string]string{}
	ref := func(key string) string {
		if i, ok := at[key]; ok {
			return i
		}
		a.Touched = append(a.Touched, key)
		at[key] = strconv.Itoa(len(a.Touched))
		return at[key]
	}
	var b strings.Builder
	for _, c := range cs {
		seq, read := "", ""
		if c.readKey != "" {
			seq, read = strconv.FormatUint(c.seq, 10), ref(c.readKey)
		}
		b.Reset()
		for j, l := range c.lists {
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(ref(l))
		}
		a.Field, a.Prev, a.Next = append(a.Field, fields[c.part]), append(a.Prev, c.prev), append(a.Next, c.next)
		a.Score, a.Member = append(a.Score, strconv.FormatUint(c.score, 10)), append(a.Member, member(c.conv))
		a.Seq, a.Read, a.Lists = append(a.Seq, seq), append(a.Read, read), append(a.Lists, b.String())
	}
	return a
}

// applyErr maps a batch's error reply; "@<i>" after the class names the record it concerns.
func (s *store) applyErr(batch []applyCall, err error) error {
	class, detail := scriptClass(err)
	c := batch[0]
	if at, rest, ok := strings.Cut(detail, " "); ok && strings.HasPrefix(at, "@") {
		if i, perr := strconv.Atoi(at[1:]); perr == nil && i >= 1 && i <= len(batch) {
			c, detail = batch[i-1], rest
		}
	}
	switch class {
	case "QIMFENCED", "QIMBIND":
		return &FencedError{Partition: c.part, Offset: c.offset, Detail: detail}
	}
	return &RecordError{Partition: c.part, Offset: c.offset, Err: s.scriptErr("apply", err)}
}
