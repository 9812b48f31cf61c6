package session

import (
	"context"
	"encoding/hex"
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/gates/itest"
	"github.com/qim-dev/qim/services/internal/luascript"
)

// The layout tests run each script through its typed binding with values that differ in length
// and content, on keys of their own, and check every reply field and every key the script
// writes: a swapped name in a header, a Go type or a script body shows up as a wrong field.

type layoutEnv struct {
	t   *testing.T
	ctx context.Context
	rdb *redis.Client
	p   string // key prefix of the test
}

func newLayoutEnv(t *testing.T) *layoutEnv {
	rdb := redis.NewClient(&redis.Options{Addr: itest.Endpoints(t).RedisCore})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return &layoutEnv{t: t, ctx: ctx, rdb: rdb, p: "qim:test:session-layout:" + hex.EncodeToString(randBytes(t, 8)) + ":"}
}

// runOne runs one call of b and decodes its reply; any error fails the test.
func runOne[A, R any](e *layoutEnv, b *luascript.Binding[A, R], a *A) R {
	e.t.Helper()
	cmds, err := runCalls(e.ctx, e.rdb, []call{b.Call(a)})
	if err != nil {
		e.t.Fatal(err)
	}
	r, err := b.Decode(cmds[0])
	if err != nil {
		e.t.Fatalf("%s: %v", b.Script().Name(), err)
	}
	return r
}

const layoutTopic = "0123456789abcdef0123456789abcdef"

// bind.lua binds once; a second call with other values answers the first binding.
func TestLayoutBind(t *testing.T) {
	e := newLayoutEnv(t)
	ck := e.p + "ckpt"
	first := bindArgs{Checkpoint: ck, ClusterID: "cluster-x", TopicID: layoutTopic, Partitions: 7}
	other := bindArgs{Checkpoint: ck, ClusterID: "cluster-y", TopicID: "fedcba9876543210fedcba9876543210", Partitions: 9}
	for _, s := range []struct {
		name string
		in   bindArgs
		want bindOut
	}{
		{"fresh", first, bindOut{ClusterID: "cluster-x", TopicID: layoutTopic, Partitions: "7", Fresh: 1}},
		{"again", first, bindOut{ClusterID: "cluster-x", TopicID: layoutTopic, Partitions: "7", Fresh: 0}},
		{"another binding", other, bindOut{ClusterID: "cluster-x", TopicID: layoutTopic, Partitions: "7", Fresh: 0}},
	} {
		if got := runOne(e, scripts.bind, &s.in); got != s.want {
			t.Errorf("%s: reply %+v, want %+v", s.name, got, s.want)
		}
	}
	want := map[string]string{"cluster_id": "cluster-x", "topic_id": layoutTopic, "partitions": "7"}
	if got := e.rdb.HGetAll(e.ctx, ck).Val(); !reflect.DeepEqual(got, want) {
		t.Errorf("checkpoint hash %q, want %q", got, want)
	}
}

// apply.lua: every list gets the member at the score, the read key the seq, the checkpoint
// moves; a repeated call answers 0 and writes nothing; without seq the read key is not touched.
func TestLayoutApply(t *testing.T) {
	e := newLayoutEnv(t)
	ck, read, list1, list2 := e.p+"ckpt", e.p+"read", e.p+"list1", e.p+"list2"
	runOne(e, scripts.bind, &bindArgs{Checkpoint: ck, ClusterID: "c", TopicID: layoutTopic, Partitions: 4})
	member := "conversation-16b"
	one := func(prev, next, score, seq, readIdx string) applyArgs {
		return applyArgs{Checkpoint: ck, Touched: []string{list1, read, list2}, TopicID: layoutTopic,
			Field: []string{"p:3"}, Prev: []string{prev}, Next: []string{next}, Score: []string{score},
			Member: []string{member}, Seq: []string{seq}, Read: []string{readIdx}, Lists: []string{"1 3"}}
	}
	steps := []struct {
		name    string
		in      applyArgs
		applied int64
		score   float64
		read    string
		ckpt    string
	}{
		{"with read", one("", "18", "1234567", "9", "2"), 1, 1234567, "9", "18"},
		{"retry", one("", "18", "7654321", "11", "2"), 0, 1234567, "9", "18"},
		{"without read", one("18", "19", "2345678", "", ""), 1, 2345678, "9", "19"},
	}
	for _, s := range steps {
		if got := runOne(e, scripts.apply, &s.in); got.Applied != s.applied {
			t.Errorf("%s: applied %d, want %d", s.name, got.Applied, s.applied)
		}
		for _, l := range []string{list1, list2} {
			if sc := e.rdb.ZScore(e.ctx, l, member).Val(); sc != s.score {
				t.Errorf("%s: %s score %v, want %v", s.name, l, sc, s.score)
			}
		}
		if r := e.rdb.HGet(e.ctx, read, member).Val(); r != s.read {
			t.Errorf("%s: read watermark %q, want %q", s.name, r, s.read)
		}
		if c := e.rdb.HGet(e.ctx, ck, "p:3").Val(); c != s.ckpt {
			t.Errorf("%s: checkpoint %q, want %q", s.name, c, s.ckpt)
		}
	}
	if n := e.rdb.HLen(e.ctx, ck).Val(); n != 4 {
		t.Errorf("checkpoint hash has %d fields, want the binding and p:3", n)
	}
}

// mark_read.lua stores max(stored, requested) and answers what is stored.
func TestLayoutMarkRead(t *testing.T) {
	e := newLayoutEnv(t)
	read := e.p + "read"
	for _, s := range []struct {
		name, member, seq, want, stored string
	}{
		{"zero on an absent watermark", "conversation-00b", "0", "0", ""},
		{"forward", "conversation-16b", "5", "5", "5"},
		{"retry", "conversation-16b", "5", "5", "5"},
		{"stale", "conversation-16b", "3", "5", "5"},
		{"further", "conversation-16b", "12", "12", "12"},
	} {
		got := runOne(e, scripts.markRead, &markReadArgs{Read: read, Member: s.member, Seq: s.seq})
		if got.Watermark != s.want {
			t.Errorf("%s: watermark %q, want %q", s.name, got.Watermark, s.want)
		}
		if v := e.rdb.HGet(e.ctx, read, s.member).Val(); v != s.stored {
			t.Errorf("%s: stored %q, want %q", s.name, v, s.stored)
		}
	}
}
