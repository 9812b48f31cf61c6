package gates

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/qim-dev/qim/gates/keyspace"
	"github.com/qim-dev/qim/services/inspect"
)

// family builds a found family from the real declaration named name.
func family(t *testing.T, name string, keys, withTTL int64) *keyspace.Family {
	t.Helper()
	for _, f := range inspect.RedisKeyFamilies() {
		if f.Name == name {
			return &keyspace.Family{RedisKeyFamily: f, Keys: keys, WithTTL: withTTL, MinTTL: time.Minute, MaxTTL: time.Hour,
				Sampled: min(keys, 4), SampledBytes: 100 * min(keys, 4)}
		}
	}
	t.Fatalf("no family %s", name)
	return nil
}

func TestJudgeFamily(t *testing.T) {
	tests := []struct {
		name          string
		family        string
		keys, withTTL int64
		pass          bool
		detail        []string
	}{
		{"expiring, all with TTL", "msgstore.commit", 10, 10, true, []string{"10 keys", "with TTL 10 (1m0s–1h0m0s)", "must expire", "sampled keys, extrapolated"}},
		{"expiring, one without", "mailboxstore.cursor", 10, 9, false, []string{"without TTL 1", "must expire"}},
		{"permanent, none with TTL", "identity.hlc", 2, 0, true, []string{"lives forever: a writer_id's HLC", "MEMORY USAGE of every key"}},
		{"permanent, one with TTL", "gateway.session_epoch", 3, 1, false, []string{"with TTL 1", "lives forever"}},
		{"trimmed, all registered", "msgstore.history_record", 5, 0, true, []string{"without TTL 5", "trimmed by the writer's hot-tier trim", "5 positions, 0 not registered"}},
		{"trimmed, one unregistered", "msgstore.history_index", 5, 0, false, []string{"5 positions, 1 not registered for the trim"}},
		{"trimmed, one with a TTL", "msgstore.history_record", 5, 1, false, []string{"with TTL 1"}},
		{"empty", "msgstore.recovery_index", 0, 0, true, []string{"0 keys", "with TTL 0 (none)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &Result{}
			f := family(t, tc.family, tc.keys, tc.withTTL)
			if f.Trimmed != "" {
				f.Positions = tc.keys
				if !tc.pass && tc.withTTL == 0 {
					f.Untracked = 1
				}
			}
			judgeFamily(r, f)
			c := r.Checks[0]
			if c.Name != "family "+tc.family || c.Passed != tc.pass {
				t.Fatalf("check %+v, want passed=%v", c, tc.pass)
			}
			for _, d := range tc.detail {
				if !strings.Contains(c.Detail, d) {
					t.Errorf("detail %q lacks %q", c.Detail, d)
				}
			}
			if r.Metrics[tc.family+".keys"] != float64(tc.keys) || r.Metrics[tc.family+".without_ttl"] != float64(tc.keys-tc.withTTL) {
				t.Errorf("metrics %v", r.Metrics)
			}
		})
	}
}

// inventories are a core and a mailbox inventory with the given families found, whose memory
// is exactly the budget for 1,000 messages (core) and half of it for 1,000 entries (mailbox).
func inventories(core, mailbox []*keyspace.Family) []*keyspace.Inventory {
	const startup = 1_000_000
	return []*keyspace.Inventory{
		{Instance: inspect.RedisCore, Families: core, Keys: 100, UsedMemory: startup + 1000*redisCoreBytesPerMessage,
			UsedMemoryStartup: startup},
		{Instance: inspect.RedisMailbox, Families: mailbox, Keys: 50, UsedMemory: startup + 500*redisMailboxBytesPerEntry,
			UsedMemoryStartup: startup},
	}
}

func TestJudgeArtifacts(t *testing.T) {
	entries := func(t *testing.T, n int64) *keyspace.Family {
		f := family(t, "mailboxstore.day_bucket", 10, 10)
		f.Members = n
		return f
	}
	tests := []struct {
		name     string
		edit     func(t *testing.T, invs []*keyspace.Inventory)
		messages int64
		msgErr   error
		fail     []string // names of the failed checks, in order
	}{
		{"clean and within budget", func(*testing.T, []*keyspace.Inventory) {}, 1000, nil, nil},
		{"unknown key", func(_ *testing.T, invs []*keyspace.Inventory) {
			invs[1].Unknown, invs[1].UnknownKeys = 1, []string{"qim:stray:1"}
		}, 1000, nil, []string{"unknown keys (mailbox)"}},
		{"hot history registered for the trim", func(t *testing.T, invs []*keyspace.Inventory) {
			idx, rec := family(t, "msgstore.history_index", 3, 0), family(t, "msgstore.history_record", 9, 0)
			idx.Positions, rec.Positions = 9, 9
			invs[0].Families = append(invs[0].Families, idx, rec)
		}, 1000, nil, nil},
		{"hot history not registered", func(t *testing.T, invs []*keyspace.Inventory) {
			idx, rec := family(t, "msgstore.history_index", 3, 0), family(t, "msgstore.history_record", 9, 0)
			idx.Positions, rec.Positions, rec.Untracked = 9, 9, 2
			invs[0].Families = append(invs[0].Families, idx, rec)
		}, 1000, nil, []string{"family msgstore.history_record"}},
		{"core over budget", func(*testing.T, []*keyspace.Inventory) {}, 999, nil, []string{"core memory per message"}},
		{"mailbox over budget", func(t *testing.T, invs []*keyspace.Inventory) {
			invs[1].Families = []*keyspace.Family{entries(t, 499)}
		}, 1000, nil, []string{"mailbox memory per entry"}},
		{"no committed messages", func(*testing.T, []*keyspace.Inventory) {}, 0, errors.New("broker down"),
			[]string{"committed messages", "core memory per message"}},
		{"no mailbox entries", func(t *testing.T, invs []*keyspace.Inventory) {
			invs[1].Families = []*keyspace.Family{entries(t, 0)}
		}, 1000, nil, []string{"mailbox entries", "mailbox memory per entry"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			invs := inventories([]*keyspace.Family{family(t, "msgstore.commit", 10, 10)}, []*keyspace.Family{entries(t, 1000)})
			tc.edit(t, invs)
			r := &Result{}
			judgeArtifacts(r, invs, tc.messages, tc.msgErr)
			var failed []string
			for _, c := range r.Checks {
				if !c.Passed {
					failed = append(failed, c.Name)
				}
			}
			if strings.Join(failed, "|") != strings.Join(tc.fail, "|") {
				t.Fatalf("failed checks %q, want %q", failed, tc.fail)
			}
		})
	}
}
