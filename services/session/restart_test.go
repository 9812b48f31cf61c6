package session

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/commitlog"
)

// Stopping the service in the middle of the log and starting it again on the same Redis loses no
// conversation from any list: checkpoints move only with the writes they cover.
func TestRestartMidStreamLosesNoConversation(t *testing.T) {
	e := newEnv(t, 8)
	const pairs = 300
	ms := make([]msg, pairs)
	for i := range ms {
		ms[i] = msg{from: e.user(), to: e.user()}
	}
	e.send(ms...)
	slow := func(c *Config) { c.PollMax = 4 }
	svc, err := New(e.config(slow), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	errc := make(chan error, 1)
	go func() { errc <- svc.Run(ctx) }()
	eventually(t, 30*time.Second, "the first records to be projected", func() bool {
		return testutil.ToFloat64(svc.m.applied) > 0
	})
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("first run: %v", err)
	}
	first := testutil.ToFloat64(svc.m.applied)
	t.Logf("first run projected %.0f records before it was stopped", first)

	r := e.mustRun(nil) // serves only after catching up with the log end
	for _, m := range ms {
		for _, u := range []contract.UserID{m.from, m.to} {
			ok, err := r.svc.st.inList(e.ctx, e.key(u), e.conv(m.from, m.to))
			if err != nil || !ok {
				t.Fatalf("user %d lost conversation with %v after the restart (err %v)", u, m, err)
			}
		}
	}
	if got := len(r.list(ms[0].to)); got != 1 {
		t.Fatalf("list of a recipient has %d rows, want 1", got)
	}
	// Every partition's checkpoint reached its log end (a pipeline cut by the stop may have been
	// applied without being counted by the first run; the checkpoints are the truth).
	cps, err := r.svc.st.checkpoints(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	adm, err := commitlog.NewAdmin(e.kafka)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	bounds, err := adm.Watermarks(e.ctx, e.topic)
	if err != nil {
		t.Fatal(err)
	}
	for p, cp := range cps {
		if cp != bounds[int32(p)].High {
			t.Fatalf("partition %d checkpoint %d, log end %d", p, cp, bounds[int32(p)].High)
		}
	}
}

// Checkpoints are bound to the topic id: after the topic is deleted and recreated under the same
// name (offsets now name other records), start-up refuses instead of resuming. A partition count
// that differs from the configured shard count and a checkpoint outside the log refuse too.
func TestStartFailsClosed(t *testing.T) {
	e := newEnv(t, 2)
	e.send(msg{from: e.user(), to: e.user()})
	r := e.mustRun(nil)
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	t.Run("partition count", func(t *testing.T) {
		_, err := e.run(func(c *Config) { c.ShardCount = 4 })
		var pe *commitlog.PartitionCountError
		if !errors.As(err, &pe) {
			t.Fatalf("start with 4 shards on a 2-partition topic = %v", err)
		}
	})
	t.Run("checkpoint beyond the log", func(t *testing.T) {
		st := newStore(e.rdb, e.topic, e.parts)
		old, err := e.rdb.HGet(e.ctx, st.ckpt, st.fields[0]).Result()
		if err != nil && old != "" {
			t.Fatal(err)
		}
		if err := e.rdb.HSet(e.ctx, st.ckpt, st.fields[0], 999).Err(); err != nil {
			t.Fatal(err)
		}
		_, err = e.run(nil)
		var se *StartError
		var oe *commitlog.OffsetOutOfRangeError
		if !errors.As(err, &se) || se.Partition != 0 || !errors.As(err, &oe) {
			t.Fatalf("start with a checkpoint beyond the log = %v", err)
		}
		if old == "" {
			err = e.rdb.HDel(e.ctx, st.ckpt, st.fields[0]).Err()
		} else {
			err = e.rdb.HSet(e.ctx, st.ckpt, st.fields[0], old).Err()
		}
		if err != nil {
			t.Fatal(err)
		}
	})
	t.Run("recreated topic", func(t *testing.T) {
		if _, err := e.admin().DeleteTopic(e.ctx, e.topic); err != nil {
			t.Fatal(err)
		}
		e.createTopic()
		_, err := e.run(nil)
		var be *BindingError
		if !errors.As(err, &be) || be.Field != "topic_id" {
			t.Fatalf("start on a recreated topic = %v, want a BindingError on topic_id", err)
		}
	})
}
