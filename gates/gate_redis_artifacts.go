package gates

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/keyspace"
	"github.com/qim-dev/qim/services/inspect"
)

// Gate 7 budgets (harness values, not contract constants): the memory the data left in Redis
// (INFO used_memory − used_memory_startup − mem_clients_normal) divided by what the load stored.
// Where the numbers come from is in redisArtifactsGate's comment and docs/perf.md.
const (
	redisCoreBytesPerMessage  = 2432 // core Redis bytes per committed message
	redisMailboxBytesPerEntry = 1152 // mailbox Redis bytes per mailbox entry
)

// redisArtifactsGate is gate 7: after the load gates, every key of both Redis instances must
// belong to a key family its owning store declared (inspect.RedisKeyFamilies), follow that
// family's TTL rule, and the memory the load left must stay within budget per committed message
// (core) and per mailbox entry (mailbox).
//
// Invariants: the families come from the stores, never from this file, so a new key layout is
// either declared by its owner or reported as unknown here; an unknown key fails (an undeclared
// artifact), a key without a TTL in a family that must expire fails, and so does a TTL on a key
// that must live forever; the committed-message count comes from the durable side (the records
// in qim.outbox), not from Redis, so a leak cannot shrink its own denominator. Keys are found
// with SCAN (gates/keyspace); bytes per family are sampled and extrapolated, and say so.
//
// The hot history (msgstore.history_record and msgstore.history_index) has no TTL: it is bounded
// by the writer's hot-tier trim (ADR-0022). Its families are declared trimmed, so every position
// they hold must be registered for the trim, and the trim must be running with an archive
// watermark (gate_trim.go): with the redis backend (no CQL node) nothing is ever trimmed, and the
// gate fails saying so. That is deliberately not allowlisted: an allowance would turn it green.
//
// Rooms leave no trace (gate_room_trace.go): every conversation the keys name, where each store
// declares it (key names, session-list members, read-watermark fields, mailbox entries), must
// not be a room's, and the run must have published room events for that to mean anything.
//
// Budgets: measured on the project's 2-core VM (Redis 7.0.15, jemalloc) with `qim-gate run
// services e2e theavy redis-artifacts invariants`. Core, with the hot-tier trim candidates
// (ADR-0022) and `--with-cql`, three runs: 2,337, 2,339 and 2,350 B per committed message (5,197
// messages); before the candidates, four runs gave 2,011–2,024 B. The candidates cost ~209 B
// per message here: T-HEAVY's one-message conversations spread ~20 candidates over each of the
// 256 commit buckets' sorted sets, and a 72-byte member is above zset-max-listpack-value (64),
// so every one is a skiplist node. Mailbox, four runs: 1,083, 1,090, 1,095 and 1,098 B per entry
// (10,306 entries). That workload is the worst case per message: T-HEAVY's 5,000 one-message
// conversations give every message its own conversation_seq counter, history index, trim
// candidate, session-list rows, read watermark and session_epoch. After a 60 s perf run (45,453
// messages, 64-byte bodies, many per conversation) the figures were 1,253 B per message and 581
// B per entry (before the candidates). Each budget is the worst measured value plus at least 50 B
// (over three times the run-to-run spread of 13–15 B), rounded up to a multiple of 64: 2,432 and
// 1,152, 82 and 54 B of headroom. That stays below what one more key per message costs (the
// smallest string keys here, session_epoch and conversation_seq, take 120–136 B by MEMORY
// USAGE), so such a leak fails, while the startup baseline and the services' connection
// buffers, which do not grow with the data, are not counted. More messages per conversation
// only lower the figures; bodies larger than the load generator's 64 bytes raise them and need
// their own measurement.
type redisArtifactsGate struct {
	sample int // keys per family whose MEMORY USAGE is read; 0 = keyspace.DefaultSample
}

func (redisArtifactsGate) Name() string { return "redis-artifacts" }
func (redisArtifactsGate) Title() string {
	return "Redis memory per message, keys without TTL, no room in Redis"
}

func (g redisArtifactsGate) Run(ctx context.Context, env *Env, r *Result) {
	st, err := env.Stack(ctx)
	if err != nil {
		r.Fail(err)
		return
	}
	ep := st.Endpoints()
	fams := inspect.RedisKeyFamilies()
	var invs []*keyspace.Inventory
	for _, in := range []struct {
		instance inspect.RedisInstance
		addr     string
	}{{inspect.RedisCore, ep.RedisCore}, {inspect.RedisMailbox, ep.RedisMailbox}} {
		rdb := redis.NewClient(&redis.Options{Addr: in.addr})
		inv, err := keyspace.Take(ctx, rdb, in.instance, fams, keyspace.Options{Sample: g.sample})
		_ = rdb.Close()
		if err != nil {
			r.Fail(err)
			return
		}
		env.Progressf("%s Redis: %d keys in %d families, %d unknown", in.instance, inv.Keys, len(inv.Families), inv.Unknown)
		invs = append(invs, inv)
	}
	messages, err := outboxRecords(ctx, ep.KafkaBrokers)
	judgeArtifacts(r, invs, messages, err)
	judgeTrimLive(ctx, r, env, invs)
	judgeRoomTrace(ctx, r, env, invs)
}

// outboxRecords counts the records in qim.outbox (end − start offset of every partition): the
// committed messages, from the durable side. A produce retried after its acknowledgement was
// lost can store a message twice, which only makes the count, and so the budget, stricter.
func outboxRecords(ctx context.Context, brokers []string) (int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, contract.TopicOutbox)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return 0, fmt.Errorf("end offsets of %s: %w", contract.TopicOutbox, err)
	}
	starts, err := adm.ListStartOffsets(ctx, contract.TopicOutbox)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return 0, fmt.Errorf("start offsets of %s: %w", contract.TopicOutbox, err)
	}
	var n int64
	parts := 0
	ends.Each(func(o kadm.ListedOffset) {
		s, _ := starts.Lookup(o.Topic, o.Partition)
		n += o.Offset - s.Offset
		parts++
	})
	if parts == 0 {
		return 0, fmt.Errorf("%s has no partitions", contract.TopicOutbox)
	}
	return n, nil
}

// judgeArtifacts records the evidence: unknown keys per instance, one check per family (its
// counts, bytes and TTL state against its rule), the known unbounded families, and memory per
// committed message and per mailbox entry against the budgets.
func judgeArtifacts(r *Result, invs []*keyspace.Inventory, messages int64, msgErr error) {
	var core, mailbox *keyspace.Inventory
	var unbounded []string
	var note string
	for _, inv := range invs {
		in := string(inv.Instance)
		r.Metric(in+"_keys", float64(inv.Keys))
		for _, f := range []string{"used_memory", "used_memory_startup", "used_memory_dataset", "used_memory_overhead",
			"mem_clients_normal", "used_memory_scripts", "mem_aof_buffer", "mem_fragmentation_bytes"} {
			r.Metric(in+"_"+f, float64(inv.Memory[f]))
		}
		r.Metric(in+"_family_bytes", float64(inv.FamilyBytes()))
		r.Check("unknown keys ("+in+")", inv.Unknown == 0, "%d of %d keys match no key family of the %s instance%s",
			inv.Unknown, inv.Keys, in, examples(inv.UnknownKeys))
		for _, f := range inv.Families {
			judgeFamily(r, f)
			if f.Unbounded != "" && f.WithoutTTL() > 0 {
				unbounded, note = append(unbounded, f.Name), f.Unbounded
			}
		}
		switch inv.Instance {
		case inspect.RedisCore:
			core = inv
		case inspect.RedisMailbox:
			mailbox = inv
		}
	}
	r.Check("unbounded families", len(unbounded) == 0, "families that must expire but grow without bound today: %s%s",
		listOrNone(unbounded), prefixed(" — ", note))
	r.Metric("committed_messages", float64(messages))
	if !r.Check("committed messages", msgErr == nil && messages > 0, "%d records in %s (%v)", messages, contract.TopicOutbox, msgErr) {
		messages = 0
	}
	perUnit(r, core, "core", "message", "messages", messages, redisCoreBytesPerMessage)
	entries := int64(0)
	if mailbox != nil {
		entries = mailbox.MailboxEntries()
	}
	r.Metric("mailbox_entries", float64(entries))
	r.Check("mailbox entries", entries > 0, "%d mailbox entries in the families that hold them", entries)
	perUnit(r, mailbox, "mailbox", "entry", "entries", entries, redisMailboxBytesPerEntry)
}

// judgeFamily checks one family's TTL rule and reports its count, bytes and TTL state.
func judgeFamily(r *Result, f *keyspace.Family) {
	pre := f.Name + "."
	r.Metric(pre+"keys", float64(f.Keys))
	r.Metric(pre+"bytes", float64(f.Bytes()))
	r.Metric(pre+"without_ttl", float64(f.WithoutTTL()))
	rule, ok := "must expire", f.WithoutTTL() == 0
	switch {
	case f.Trimmed != "":
		rule, ok = fmt.Sprintf("trimmed by %s: %d positions, %d not registered for the trim", f.Trimmed, f.Positions, f.Untracked),
			f.WithTTL == 0 && f.Untracked == 0
		r.Metric(pre+"untracked", float64(f.Untracked))
	case !f.Expires:
		rule, ok = "lives forever: "+f.Forever, f.WithTTL == 0
	}
	if f.Unbounded != "" {
		rule += "; known unbounded: " + f.Unbounded
	}
	ttl := "none"
	if f.WithTTL > 0 {
		ttl = fmt.Sprintf("%s–%s", f.MinTTL.Round(time.Second), f.MaxTTL.Round(time.Second))
		r.Metric(pre+"min_ttl_s", f.MinTTL.Seconds())
		r.Metric(pre+"max_ttl_s", f.MaxTTL.Seconds())
	}
	r.Check("family "+f.Name, ok, "%s %s: %d keys, %s (%s); with TTL %d (%s), without TTL %d; %s%s",
		f.Instance, f.Layout, f.Keys, byteSize(f.Bytes()), sampling(f), f.WithTTL, ttl, f.WithoutTTL(), rule, examples(f.Breaking))
}

// perUnit checks an instance's memory per stored unit against its budget: INFO used_memory less
// the empty server (used_memory_startup) and the clients' buffers (mem_clients_normal, which
// follow the services' connection pools, not the data), with the families' sum for comparison.
func perUnit(r *Result, inv *keyspace.Inventory, in, unit, units string, n, budget int64) {
	name := fmt.Sprintf("%s memory per %s", in, unit)
	if inv == nil || n == 0 {
		r.Check(name, false, "no %s to divide by: the memory per %s is not measured", units, unit)
		return
	}
	stored := inv.UsedMemory - inv.UsedMemoryStartup - inv.MemClients
	per, famPer := stored/n, inv.FamilyBytes()/n
	r.Metric(in+"_bytes_per_"+unit, float64(per))
	r.Metric(in+"_family_bytes_per_"+unit, float64(famPer))
	r.Check(name, per <= budget, "%d B per %s (budget %d): used_memory %s − startup %s − clients %s over %d %s; "+
		"the families' sampled sum is %s, %d B per %s", per, unit, budget, byteSize(inv.UsedMemory),
		byteSize(inv.UsedMemoryStartup), byteSize(inv.MemClients), n, units, byteSize(inv.FamilyBytes()), famPer, unit)
}

func sampling(f *keyspace.Family) string {
	if f.Sampled >= f.Keys {
		return "MEMORY USAGE of every key"
	}
	return fmt.Sprintf("MEMORY USAGE of %d sampled keys, extrapolated", f.Sampled)
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// examples renders up to three key names, quoted (a key may hold any byte).
func examples(keys []string) string {
	if len(keys) == 0 {
		return ""
	}
	q := make([]string, len(keys))
	for i, k := range keys {
		if len(k) > 96 {
			k = k[:96] + "…"
		}
		q[i] = fmt.Sprintf("%q", k)
	}
	return "; e.g. " + strings.Join(q, ", ")
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}
