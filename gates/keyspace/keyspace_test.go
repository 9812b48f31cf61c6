package keyspace_test

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/gates"
	"github.com/qim-dev/qim/gates/itest"
	"github.com/qim-dev/qim/gates/keyspace"
	"github.com/qim-dev/qim/gates/release"
	"github.com/qim-dev/qim/gates/stack"
	"github.com/qim-dev/qim/services/inspect"
)

func TestMain(m *testing.M) { os.Exit(itest.Main(m, stack.WithDispatchShards(8))) }

// scratchDB is a database no service uses: Take's own tests flush it, which is safe even on a
// stack shared through QIM_IT_ENDPOINTS.
const scratchDB = 15

func client(t *testing.T, addr string, db int) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr, DB: db})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// write stores key as its family needs it: a zset for mailbox entries (members entries) and
// trimmed positions, a zset or hash of 16-byte members where members name conversations, a
// string otherwise; with a TTL when ttl > 0.
func write(t *testing.T, ctx context.Context, rdb *redis.Client, f inspect.RedisKeyFamily, key string, entries int, ttl time.Duration) {
	t.Helper()
	var err error
	switch {
	case f.ConversationMembers() == inspect.HashField:
		err = rdb.HSet(ctx, key, strings.Repeat("c", 16), "1").Err()
	case f.ConversationMembers() == inspect.ZSetMember && !f.MailboxEntries:
		err = rdb.ZAdd(ctx, key, redis.Z{Member: strings.Repeat("c", 16)}).Err()
	case f.MailboxEntries || f.TrimMembers:
		for i := range entries {
			m := strings.Repeat("e", 40) + string(rune('a'+i))
			if f.TrimMembers {
				m = strconv.Itoa(i + 1) // the positions: seqs
			}
			err = rdb.ZAdd(ctx, key, redis.Z{Member: m}).Err()
		}
	default:
		err = rdb.Set(ctx, key, strings.Repeat("v", 100), ttl).Err()
		ttl = 0
	}
	if ttl > 0 && err == nil {
		err = rdb.PExpire(ctx, key, ttl).Err()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// Classification by the stores' declarations, on golden key names of every layout.
func TestClassify(t *testing.T) {
	const h, core, mb = "0102030405060708090a0b0c0d0e0f10", inspect.RedisCore, inspect.RedisMailbox
	fams := inspect.RedisKeyFamilies()
	tests := []struct {
		in   inspect.RedisInstance
		key  string
		want string // "" = unknown
	}{
		{core, "qim:cmt:{b007}:" + h + ":42:" + h, "msgstore.commit"},
		{core, "qim:cmtshrunk:{b007}:" + h + ":42:" + h, "msgstore.commit_shrunk"},
		{core, "qim:cmidown:" + h + ":42:" + h, "msgstore.cmid_owner"},
		{core, "qim:cseq:{b007}:" + h + ":" + h, "msgstore.conversation_seq"},
		{core, "qim:hidx:{b007}:" + h + ":" + h + ":0", "msgstore.history_index"},
		{core, "qim:hrec:{b007}:" + h + ":" + h + ":1025", "msgstore.history_record"},
		{core, "qim:cmtpending", "msgstore.recovery_index"},
		{core, "qim:hlc:1:0", "identity.hlc"},
		{core, "qim:writer-lease:1:0", "identity.writer_lease"},
		{core, "qim:sess:" + h + ":42:phone:1", "gateway.session_epoch"},
		{core, "qim:sess:list:" + h + ":42", "session.list"},
		{core, "qim:read:" + h + ":42", "session.read"},
		{core, "qim:sess:ckpt:qim.dispatch", "session.checkpoint"},
		{mb, "qim:mbepoch:{s12}", "mailboxstore.shard_epoch"},
		{mb, "qim:mbwm:{s12}", "mailboxstore.watermark"},
		{mb, "qim:mbdp:{s12}:" + h, "mailboxstore.dispatch_identity"},
		{mb, "qim:mb:{s12}:" + h + ":42:20000", "mailboxstore.day_bucket"},
		{mb, "qim:mbix:{s12}:" + h + ":42", "mailboxstore.day_index"},
		{mb, "qim:mbcur:{s12}:" + h + ":42:phone", "mailboxstore.cursor"},
		{core, "qim:mb:{s12}:" + h + ":42:20000", ""},           // a mailbox layout in the core instance
		{mb, "qim:cmtpending", ""},                              // and the other way round
		{core, "qim:hrec:{b007}:" + h + ":" + h + ":", ""},      // a record key without its seq
		{core, "qim:sess:list:" + h + ":42:phone", ""},          // neither a list nor an epoch
		{core, "qim:cmt:{b7}:" + h + ":42:" + h, ""},            // a tag of another shape
		{mb, "qim:mbcur:{s12}:" + h + ":42:", ""},               // no device
		{core, "qim:test:msgstore-layout:" + h + ":commit", ""}, // a test's key
		{core, "", ""},
	}
	for _, tc := range tests {
		f, ok := keyspace.Classify(fams, tc.in, tc.key)
		if got := f.Name; ok != (tc.want != "") || got != tc.want {
			t.Errorf("%s %q: family %q (%v), want %q", tc.in, tc.key, got, ok, tc.want)
		}
	}
}

// Take classifies every key of an instance by that instance's families only, reads TTLs, counts
// mailbox entries, samples memory, and lists keys that break their family's rule.
func TestTake(t *testing.T) {
	ep := itest.Endpoints(t)
	ctx := context.Background()
	core, mailbox := client(t, ep.RedisCore, scratchDB), client(t, ep.RedisMailbox, scratchDB)
	for _, rdb := range []*redis.Client{core, mailbox} {
		if err := rdb.FlushDB(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	fams := inspect.RedisKeyFamilies()
	for _, f := range fams {
		rdb, ttl := core, time.Duration(0)
		if f.Instance == inspect.RedisMailbox {
			rdb = mailbox
		}
		if f.Expires {
			ttl = time.Hour
		}
		if f.Name != "msgstore.trim_candidates" { // a sorted set: the history_record case below makes it
			write(t, ctx, rdb, f, f.Example, 3, ttl)
		}
		if f.Name == "mailboxstore.cursor" { // breaks its rule: no TTL in an expiring family
			write(t, ctx, rdb, f, f.Example+"2", 0, 0)
		}
		if f.Name == "identity.hlc" { // breaks its rule: a TTL on a key that must live forever
			write(t, ctx, rdb, f, strings.Replace(f.Example, ":2", ":3", 1), 0, time.Minute)
		}
		if f.Name == "msgstore.history_record" { // seq 1, registered for the trim; the index's seqs 2 and 3 are not
			for _, c := range f.TrimCandidates(f.Example, nil) {
				if err := rdb.ZAdd(ctx, c.Set, redis.Z{Member: c.Member}).Err(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	fams0 := fams[0]
	write(t, ctx, mailbox, fams0, fams0.Example, 0, time.Hour) // a core key in the mailbox instance
	write(t, ctx, core, fams0, "qim:stray:1", 0, 0)

	inv, err := keyspace.Take(ctx, mailbox, inspect.RedisMailbox, fams, keyspace.Options{Sample: 1, ScanCount: 2})
	if err != nil {
		t.Fatal(err)
	}
	if inv.Unknown != 1 || len(inv.UnknownKeys) != 1 || inv.UnknownKeys[0] != fams0.Example {
		t.Errorf("mailbox unknown keys %d %q, want the core family's key", inv.Unknown, inv.UnknownKeys)
	}
	if inv.MailboxEntries() != 3 || inv.UsedMemory <= inv.UsedMemoryStartup || inv.FamilyBytes() <= 0 {
		t.Errorf("entries %d, used_memory %d, startup %d, families %d", inv.MailboxEntries(), inv.UsedMemory,
			inv.UsedMemoryStartup, inv.FamilyBytes())
	}
	for _, f := range inv.Families {
		want, breaking := int64(1), 0
		if f.Name == "mailboxstore.cursor" {
			want, breaking = 2, 1
		}
		if f.Keys != want || len(f.Breaking) != breaking || f.Sampled != 1 || f.SampledBytes <= 0 {
			t.Errorf("%s: %d keys (want %d), breaking %q, sampled %d (%d B)", f.Name, f.Keys, want, f.Breaking, f.Sampled, f.SampledBytes)
		}
		if f.Expires && (f.MinTTL <= 50*time.Minute || f.MaxTTL > time.Hour) {
			t.Errorf("%s: TTL %s–%s, want about an hour", f.Name, f.MinTTL, f.MaxTTL)
		}
		if f.Sampled == 1 && f.Keys == 2 && f.Bytes() != 2*f.SampledBytes {
			t.Errorf("%s: %d B extrapolated from one of two keys of %d B", f.Name, f.Bytes(), f.SampledBytes)
		}
	}
	inv, err = keyspace.Take(ctx, core, inspect.RedisCore, fams, keyspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if inv.Unknown != 1 || inv.UnknownKeys[0] != "qim:stray:1" {
		t.Errorf("core unknown keys %d %q", inv.Unknown, inv.UnknownKeys)
	}
	for _, f := range inv.Families {
		breaks := f.Name == "identity.hlc" || f.Name == "msgstore.history_index"
		if breaks != (len(f.Breaking) == 1) || (f.Name == "identity.hlc" && f.WithTTL != 1) {
			t.Errorf("%s: breaking %q, with TTL %d", f.Name, f.Breaking, f.WithTTL)
		}
		switch f.Name {
		case "msgstore.history_index":
			if f.Positions != 3 || f.Untracked != 2 {
				t.Errorf("%s: %d positions, %d untracked; want 3, 2", f.Name, f.Positions, f.Untracked)
			}
		case "msgstore.history_record":
			if f.Positions != 1 || f.Untracked != 0 {
				t.Errorf("%s: %d positions, %d untracked; want 1, 0", f.Name, f.Positions, f.Untracked)
			}
		}
	}
}

// The gate itself, on the real Redis of the stack: a key without a TTL in a family that must
// expire fails that family by name, an unknown key fails its instance, a well-kept family
// passes, and without committed messages the memory per message is not measured, so it fails.
func TestRedisArtifactsGateFailsOnArtifacts(t *testing.T) {
	st := itest.Stack(t)
	ep := st.Endpoints()
	ctx := context.Background()
	core, mailbox := client(t, ep.RedisCore, 0), client(t, ep.RedisMailbox, 0)
	byName := map[string]inspect.RedisKeyFamily{}
	for _, f := range inspect.RedisKeyFamilies() {
		byName[f.Name] = f
	}
	cursor, commit := byName["mailboxstore.cursor"], byName["msgstore.commit"]
	write(t, ctx, mailbox, cursor, cursor.Example, 0, 0)
	write(t, ctx, core, commit, commit.Example, 0, time.Hour)
	write(t, ctx, mailbox, cursor, "qim:stray:gate7", 0, 0)
	t.Cleanup(func() {
		_ = mailbox.Del(context.Background(), cursor.Example, "qim:stray:gate7").Err()
		_ = core.Del(context.Background(), commit.Example).Err()
	})
	g, ok := release.Lookup("redis-artifacts")
	if !ok {
		t.Fatal("no redis-artifacts gate")
	}
	env := &gates.Env{Progress: &bytes.Buffer{}, Stack: func(context.Context) (stack.Stack, error) { return st, nil }}
	r := &gates.Result{}
	g.Run(ctx, env, r)
	if r.Error != "" {
		t.Fatalf("gate error: %s", r.Error)
	}
	checks := map[string]gates.Check{}
	for _, c := range r.Checks {
		checks[c.Name] = c
	}
	for name, want := range map[string]struct {
		pass   bool
		detail string
	}{
		"family mailboxstore.cursor": {false, "without TTL 1; must expire; e.g. " + `"` + cursor.Example + `"`},
		"unknown keys (mailbox)":     {false, `"qim:stray:gate7"`},
		"family msgstore.commit":     {true, "1 keys"},
		"unknown keys (core)":        {true, "0 of"},
		"committed messages":         {false, "0 records"},
		"core memory per message":    {false, "not measured"},
	} {
		c, ok := checks[name]
		if !ok || c.Passed != want.pass || !strings.Contains(c.Detail, want.detail) {
			t.Errorf("check %q = %+v (present %v), want passed=%v with %q", name, c, ok, want.pass, want.detail)
		}
	}
}
