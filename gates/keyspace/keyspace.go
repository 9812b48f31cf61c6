// Package keyspace takes the inventory of one Redis instance for gate 7 (redis-artifacts): every
// key, classified into the key family its owner declared (inspect.RedisKeyFamilies), with per
// family the key count, the TTL state, the memory and, where members are mailbox entries, the
// entry count; plus the instance's INFO memory.
//
// It only reads (SCAN, PTTL, ZCARD, MEMORY USAGE, INFO) and never calls KEYS, which blocks the
// server for the whole keyspace. Memory per family is MEMORY USAGE (SAMPLES 0: every element of
// a collection counted) of a uniform random sample of at most Options.Sample keys, scaled to
// the family's key count: exact for families no larger than the sample, an estimate above it.
// Judging what it finds is the gate's business, not this package's.
package keyspace

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/inspect"
)

// Defaults of Options.
const (
	DefaultSample    = 256  // keys per family whose MEMORY USAGE is read
	DefaultScanCount = 1000 // SCAN COUNT hint: keys per round trip
	examplesKept     = 3    // key names kept per finding, for the report
)

// Options tunes Take; zero values take the defaults.
type Options struct {
	Sample    int
	ScanCount int64
}

// Family is what the scan found of one declared family.
type Family struct {
	inspect.RedisKeyFamily
	Keys           int64
	WithTTL        int64         // keys carrying a TTL
	MinTTL, MaxTTL time.Duration // over the keys carrying one
	Members        int64         // ZCARD sum, for families whose members are mailbox entries
	Sampled        int64         // keys whose MEMORY USAGE was read
	SampledBytes   int64
	// Positions and Untracked, for a trimmed family: the positions its keys hold, and those not
	// registered for the trim (never to be removed).
	Positions, Untracked int64
	// Breaking are up to three keys that break the family's rule: without a TTL in an expiring
	// family, with one in a permanent or trimmed family, holding an untracked position.
	Breaking []string
	// Conversations are the conversation ids the family's keys name, in their names or members
	// as the owner declares (inspect.RedisKeyFamily.NamesConversations); Rooms are those of a
	// room, which no key may name (rooms live in a RoomWriter's memory only, ADR-0034);
	// Unreadable are members the owner's format does not read. RoomKeys are up to three keys
	// naming a room.
	Conversations, Rooms, Unreadable int64
	RoomKeys                         []string

	reservoir []string
}

// WithoutTTL is the number of keys carrying no TTL.
func (f *Family) WithoutTTL() int64 { return f.Keys - f.WithTTL }

// Bytes is the family's memory, extrapolated from the sample (0 when nothing was sampled).
func (f *Family) Bytes() int64 {
	if f.Sampled == 0 {
		return 0
	}
	return f.SampledBytes * f.Keys / f.Sampled
}

// Inventory is one instance's keyspace.
type Inventory struct {
	Instance inspect.RedisInstance
	Families []*Family // in declaration order, empty families included
	Keys     int64     // distinct keys scanned
	Unknown  int64     // keys no family of this instance matches
	// UnknownKeys are up to three of them.
	UnknownKeys []string
	// INFO memory: used_memory, used_memory_startup (the empty server), used_memory_dataset and
	// mem_clients_normal (the clients' buffers); Memory holds every numeric field.
	UsedMemory, UsedMemoryStartup, UsedMemoryDataset, MemClients int64
	Memory                                                       map[string]int64
}

// FamilyBytes is the sum of every family's (extrapolated) memory.
func (inv *Inventory) FamilyBytes() int64 {
	var n int64
	for _, f := range inv.Families {
		n += f.Bytes()
	}
	return n
}

// MailboxEntries is the number of members of the families that hold mailbox entries.
func (inv *Inventory) MailboxEntries() int64 {
	var n int64
	for _, f := range inv.Families {
		if f.MailboxEntries {
			n += f.Members
		}
	}
	return n
}

// Take scans rdb, which is the given instance, and classifies every key by the families of that
// instance (a key of another instance's family is unknown here: it is in the wrong place).
func Take(ctx context.Context, rdb *redis.Client, in inspect.RedisInstance, fams []inspect.RedisKeyFamily, o Options) (*Inventory, error) {
	if o.Sample <= 0 {
		o.Sample = DefaultSample
	}
	if o.ScanCount <= 0 {
		o.ScanCount = DefaultScanCount
	}
	inv := &Inventory{Instance: in}
	for _, f := range fams {
		if f.Instance == in {
			inv.Families = append(inv.Families, &Family{RedisKeyFamily: f})
		}
	}
	s := &scan{inv: inv, rdb: rdb, sample: o.Sample, seen: map[uint64]struct{}{}, seed: maphash.MakeSeed()}
	var cursor uint64
	for {
		keys, next, err := rdb.Scan(ctx, cursor, "", o.ScanCount).Result()
		if err != nil {
			return nil, fmt.Errorf("keyspace: SCAN %s: %w", in, err)
		}
		if err := s.batch(ctx, keys); err != nil {
			return nil, err
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	if err := s.measure(ctx); err != nil {
		return nil, err
	}
	return inv, readMemory(ctx, rdb, inv)
}

// scan is the state of one Take.
type scan struct {
	inv    *Inventory
	rdb    *redis.Client
	sample int
	// seen holds a 64-bit hash of every key counted: SCAN may return a key twice while the
	// table is resized, and a set of hashes is a fraction of a set of names.
	seen map[uint64]struct{}
	seed maphash.Seed
}

// batch classifies one SCAN page and reads each key's TTL (and ZCARD where members are entries)
// in one pipeline.
func (s *scan) batch(ctx context.Context, keys []string) error {
	type item struct {
		f       *Family
		key     string
		ttl     *redis.DurationCmd
		zcard   *redis.IntCmd
		members *redis.StringSliceCmd
		convs   *redis.StringSliceCmd // members naming conversations
	}
	items := make([]item, 0, len(keys))
	for _, k := range keys {
		h := maphash.String(s.seed, k)
		if _, dup := s.seen[h]; dup {
			continue
		}
		s.seen[h] = struct{}{}
		s.inv.Keys++
		f := s.classify(k)
		if f == nil {
			s.inv.Unknown++
			s.inv.UnknownKeys = keep(s.inv.UnknownKeys, k)
			continue
		}
		items = append(items, item{f: f, key: k})
	}
	if len(items) == 0 {
		return nil
	}
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range items {
			items[i].ttl = p.PTTL(ctx, items[i].key)
			if items[i].f.MailboxEntries {
				items[i].zcard = p.ZCard(ctx, items[i].key)
			}
			if items[i].f.TrimMembers {
				items[i].members = p.ZRange(ctx, items[i].key, 0, -1)
			}
			switch items[i].f.ConversationMembers() {
			case inspect.ZSetMember:
				items[i].convs = p.ZRange(ctx, items[i].key, 0, -1)
			case inspect.HashField:
				items[i].convs = p.HKeys(ctx, items[i].key)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("keyspace: PTTL %s: %w", s.inv.Instance, err)
	}
	var trimmed []trimItem
	for _, it := range items {
		ttl := it.ttl.Val()
		if ttl == -2 { // expired between SCAN and PTTL: not a key any more
			continue
		}
		if it.f.Trimmed != "" {
			var members []string
			if it.members != nil {
				members = it.members.Val()
			}
			ti := trimItem{f: it.f, key: it.key, members: members}
			for _, c := range it.f.TrimCandidates(it.key, members) {
				ti.cands = append(ti.cands, registration{c.Set, c.Member})
			}
			trimmed = append(trimmed, ti)
		}
		f := it.f
		f.Keys++
		f.reservoir = reservoirAdd(f.reservoir, it.key, f.Keys, s.sample)
		f.countConversations(it.key, it.convs)
		if it.zcard != nil {
			f.Members += it.zcard.Val()
		}
		if ttl < 0 {
			if f.Expires {
				f.Breaking = keep(f.Breaking, it.key)
			}
			continue
		}
		if f.WithTTL == 0 || ttl < f.MinTTL {
			f.MinTTL = ttl
		}
		f.MaxTTL = max(f.MaxTTL, ttl)
		f.WithTTL++
		if !f.Expires {
			f.Breaking = keep(f.Breaking, it.key)
		}
	}
	return s.checkTrimmed(ctx, trimmed)
}

// Classify returns the family of instance in that key belongs to: a key of another instance's
// family is unknown there (it is in the wrong place). Take applies the same rule.
func Classify(fams []inspect.RedisKeyFamily, in inspect.RedisInstance, key string) (inspect.RedisKeyFamily, bool) {
	for _, f := range fams {
		if f.Instance == in && f.Match(key) {
			return f, true
		}
	}
	return inspect.RedisKeyFamily{}, false
}

// classify returns the family of the instance key belongs to, or nil (inv.Families holds only
// the instance's families).
func (s *scan) classify(key string) *Family {
	for _, f := range s.inv.Families {
		if f.Match(key) {
			return f
		}
	}
	return nil
}

// reservoirAdd keeps a uniform sample of at most size keys out of the n seen so far (Vitter's
// algorithm R), so the sample is not biased towards the start of the SCAN order.
func reservoirAdd(r []string, key string, n int64, size int) []string {
	if len(r) < size {
		return append(r, key)
	}
	if j := rand.Int64N(n); j < int64(size) {
		r[j] = key
	}
	return r
}

// measure reads MEMORY USAGE of every family's sample in one pipeline.
func (s *scan) measure(ctx context.Context) error {
	type item struct {
		f   *Family
		cmd *redis.IntCmd
	}
	var items []item
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, f := range s.inv.Families {
			for _, k := range f.reservoir {
				items = append(items, item{f, p.MemoryUsage(ctx, k, 0)})
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("keyspace: MEMORY USAGE %s: %w", s.inv.Instance, err)
	}
	for _, it := range items {
		if n, err := it.cmd.Result(); err == nil { // a key gone since the scan has no usage
			it.f.Sampled++
			it.f.SampledBytes += n
		}
	}
	return nil
}

// readMemory fills the INFO memory fields; the three the gate needs must be present.
func readMemory(ctx context.Context, rdb *redis.Client, inv *Inventory) error {
	info, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		return fmt.Errorf("keyspace: INFO memory %s: %w", inv.Instance, err)
	}
	inv.Memory = map[string]int64{}
	for _, line := range strings.Split(info, "\n") {
		name, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if n, err := strconv.ParseInt(v, 10, 64); ok && err == nil {
			inv.Memory[name] = n
		}
	}
	for name, dst := range map[string]*int64{"used_memory": &inv.UsedMemory, "used_memory_startup": &inv.UsedMemoryStartup,
		"used_memory_dataset": &inv.UsedMemoryDataset, "mem_clients_normal": &inv.MemClients} {
		n, ok := inv.Memory[name]
		if !ok {
			return fmt.Errorf("keyspace: INFO memory %s lacks %s", inv.Instance, name)
		}
		*dst = n
	}
	return nil
}

func keep(list []string, key string) []string {
	if len(list) < examplesKept {
		return append(list, key)
	}
	return list
}

// countConversations counts the conversations key names (in its name, and in members when
// convs holds them) and those of them that are rooms.
func (f *Family) countConversations(key string, convs *redis.StringSliceCmd) {
	count := func(c contract.ConversationID) {
		f.Conversations++
		if c.Kind() == contract.KindRoom {
			f.Rooms++
			f.RoomKeys = keep(f.RoomKeys, key)
		}
	}
	if c, ok := f.ConversationInKey(key); ok {
		count(c)
	}
	if convs == nil {
		return
	}
	for _, m := range convs.Val() {
		c, err := f.MemberConversation(m)
		if err != nil {
			f.Unreadable++
			continue
		}
		count(c)
	}
}
