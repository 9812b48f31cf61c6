package audit

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// deleteBelow removes the records of topic's partition p below off (retention, done by hand).
func (s *scene) deleteBelow(topic string, p int32, off int64) {
	s.k.t.Helper()
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: topic, Partition: p, At: off, LeaderEpoch: -1})
	resp, err := s.k.adm.DeleteRecords(s.k.ctx, os)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		s.k.t.Fatalf("delete records of %s[%d] below %d: %v", topic, p, off, err)
	}
}

// A range the audit cannot read completely fails, naming what it could not read, whatever the
// failure counts say.
func TestAuditFailsClosedOnWhatItCannotRead(t *testing.T) {
	cases := []struct {
		name  string
		setup func(s *scene, cfg *Config, rng *Range)
		gap   string
	}{
		{"dispatch records deleted by retention", func(s *scene, _ *Config, _ *Range) {
			s.deleteBelow(s.dispatch, s.k.dispatches(s.dispatch)[0].Partition, 1)
		}, "deleted by retention"},
		{"Outbox records deleted by retention", func(s *scene, _ *Config, _ *Range) {
			s.deleteBelow(s.outbox, 0, 5)
		}, "deleted by retention"},
		{"a shard without its partition", func(_ *scene, cfg *Config, _ *Range) { cfg.Shards = 2 * sceneShards },
			"partition missing"},
		{"a partition without its shard", func(_ *scene, cfg *Config, _ *Range) { cfg.Shards = sceneShards / 2 },
			"no shard reads this partition"},
		{"no dispatch topic", func(_ *scene, cfg *Config, _ *Range) { cfg.DispatchTopic += "-absent" },
			"cannot resolve the range"},
		{"the range ends past the Outbox end", func(s *scene, _ *Config, rng *Range) { rng.To = s.outboxEnd() + 5 },
			"past the Outbox end"},
		{"an undecodable dispatch record", func(s *scene, _ *Config, _ *Range) {
			s.k.produce(&kgo.Record{Topic: s.dispatch, Partition: 3, Value: []byte{0xff, 0xff, 0xff}})
		}, "undecodable dispatch record"},
		{"a dispatch of an unknown schema_version", func(s *scene, _ *Config, _ *Range) {
			s.replant(s.k.dispatches(s.dispatch)[0], 0, func(d *internalv1.GroupDispatch) { d.SchemaVersion = 2 })
		}, "schema_version 2"},
		{"an undecodable committed record", func(s *scene, _ *Config, _ *Range) {
			s.k.produce(&kgo.Record{Topic: s.outbox, Partition: 0, Value: []byte{0xff, 0xff, 0xff}})
		}, "undecodable committed record"},
		{"a committed record of an unknown schema_version", func(s *scene, _ *Config, _ *Range) {
			env := s.k.envelope(1, 2, time.Now().UnixMilli(), "v2")
			env.SchemaVersion = 2
			s.k.commit(s.outbox, env)
		}, "schema_version 2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := newKit(t)
			s := newScene(k, 12, nil)
			cfg, rng := s.config(), Range{}
			c.setup(s, &cfg, &rng)
			res := k.audit(cfg, rng)
			var fe *FailedError
			if res.Complete() || res.Passed() || !errors.As(res.Err(), &fe) || fe.Incomplete == 0 {
				t.Fatalf("complete=%v passed=%v err=%v: an unreadable range must fail", res.Complete(), res.Passed(), res.Err())
			}
			for _, g := range res.Incomplete {
				if strings.Contains(g.Reason, c.gap) {
					return
				}
			}
			t.Fatalf("no gap says %q: %+v", c.gap, res.Incomplete)
		})
	}
}

// Narrowing the range explicitly to what retention left (by offset or by time) passes: the
// dispatches of the deleted records are outside the range, not failures.
func TestAuditNarrowedPastRetentionPasses(t *testing.T) {
	k := newKit(t)
	s := newScene(k, 20, nil)
	s.deleteBelow(s.outbox, 0, 5)
	if res := k.audit(s.config(), Range{}); res.Complete() {
		t.Fatal("the default range (from offset 0) must be incomplete after retention")
	}
	since := firstTime(t, k, s.outbox, 5)
	for _, rng := range []Range{{From: 5}, {Since: since}} {
		res := k.audit(s.config(), rng)
		checkCounts(t, res, nil, "")
		if res.Covered.OutboxFrom != 5 || res.Covered.OutboxTo != 20 || res.Counts.OutboxRecords != 15 || res.Counts.OutsideRange == 0 {
			t.Fatalf("range %+v covered %+v with counts %+v", rng, res.Covered, res.Counts)
		}
	}
}

// firstTime is the timestamp of the record at off.
func firstTime(t *testing.T, k *kit, topic string, off int64) time.Time {
	t.Helper()
	ts, err := recordTime(k.ctx, []kgo.Opt{kgo.SeedBrokers(k.brokers...)}, topic, off)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}
