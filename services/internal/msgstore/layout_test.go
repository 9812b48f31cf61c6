package msgstore

import (
	"bytes"
	"context"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/services/internal/luascript"
)

// The layout tests run each script through its typed binding with values that differ in length
// and content, on keys of their own, and check every reply field and every key the script
// writes: a swapped name in a header, a Go type or a script body shows up as a wrong field.

// runOne runs one call of b and decodes its reply; any error fails t.
func runOne[A, R any](t *testing.T, ctx context.Context, rdb *redis.Client, b *luascript.Binding[A, R], a *A) R {
	t.Helper()
	cmds, err := runCalls(ctx, rdb, []call{b.Call(a)})
	if err != nil {
		t.Fatal(err)
	}
	r, err := b.Decode(cmds[0])
	if err != nil {
		t.Fatalf("%s: %v", b.Script().Name(), err)
	}
	return r
}

// layoutKeys are a test's own keys, so the layout tests share nothing with the store's.
type layoutKeys struct{ commit, seq, pending, owner, shrunk, hrec, hidx string }

func newLayoutKeys(t *testing.T) layoutKeys {
	b := randU128(t).Bytes()
	p := "qim:test:msgstore-layout:" + hex.EncodeToString(b[:]) + ":"
	return layoutKeys{p + "commit", p + "seq", p + "pending", p + "owner", p + "shrunk", p + "hrec:", p + "hidx:"}
}

// Distinguishable values: every byte argument has its own length or fill, the bucket width (3)
// is no other argument's value, and max_record_bytes is exactly the record's length.
var (
	layoutIdentity = bytes.Repeat([]byte{'i'}, 36)
	layoutMID      = bytes.Repeat([]byte{'M'}, 16)
	layoutCID      = bytes.Repeat([]byte{'C'}, 16)
	layoutRecord   = []byte("record-without-seq")
)

const layoutWidth = 3

func (k layoutKeys) reserveArgs(nowMs int64) *reserveArgs {
	return &reserveArgs{Commit: k.commit, Seq: k.seq, Pending: k.pending, Owner: k.owner,
		Identity: layoutIdentity, MessageID: layoutMID, ConversationID: layoutCID, Record: layoutRecord,
		NowMs: nowMs, HrecPrefix: k.hrec, HidxPrefix: k.hidx, BucketWidth: layoutWidth,
		MaxRecordBytes: int64(len(layoutRecord))}
}

func TestLayoutReserveScripts(t *testing.T) {
	rdb, ctx := coreClient(t), testCtx(t)
	nowMs := time.Now().UnixMilli()
	full := string(append(append([]byte(nil), layoutRecord...), 0x20, 5)) // conversation_seq 5 appended
	cases := []struct {
		name    string
		b       *reserveBinding
		st      string
		history bool
	}{
		{"reserve_and_record", scripts.reserveAndRecord, "D", true},
		{"reserve", scripts.reserve, "R", false},
	}
	for _, c := range cases {
		k := newLayoutKeys(t)
		rdb.Set(ctx, k.seq, 4, time.Minute) // the call takes seq 5: bucket 5/3 = 1
		want := commitReply{Kind: "F", storedCommit: storedCommit{St: c.st, Mid: string(layoutMID), Seq: "5",
			Rec: full, Rat: strconv.FormatInt(nowMs, 10), Cat: "", Cid: string(layoutCID), Idn: string(layoutIdentity)}}
		if got := runOne(t, ctx, rdb, c.b, k.reserveArgs(nowMs)); got != want {
			t.Errorf("%s: reply %+v, want %+v", c.name, got, want)
		}
		if got := rdb.HGetAll(ctx, k.commit).Val(); got["st"] != c.st || got["rec"] != full || got["idn"] != string(layoutIdentity) ||
			got["mid"] != string(layoutMID) || got["cid"] != string(layoutCID) || got["rat"] != want.Rat || len(got) != 7 {
			t.Errorf("%s: commit hash %q", c.name, got)
		}
		if s := rdb.ZScore(ctx, k.pending, k.commit).Val(); s != float64(nowMs) {
			t.Errorf("%s: recovery index score %v, want now_ms", c.name, s)
		}
		if o := rdb.Get(ctx, k.owner).Val(); o != k.commit {
			t.Errorf("%s: owner %q, want the commit key", c.name, o)
		}
		rec, err := rdb.Get(ctx, k.hrec+"5").Result()
		inIndex := rdb.ZScore(ctx, k.hidx+"1", "5").Val() == 5
		if c.history != (err == nil && rec == full && inIndex) {
			t.Errorf("%s: history record %q (%v), in bucket 1 %v; want written %v", c.name, rec, err, inIndex, c.history)
		}
		// A retry answers the original commit as existing and writes nothing.
		want.Kind = "E"
		if got := runOne(t, ctx, rdb, c.b, k.reserveArgs(nowMs+1)); got != want {
			t.Errorf("%s retry: reply %+v, want %+v", c.name, got, want)
		}
		if n := rdb.Get(ctx, k.seq).Val(); n != "5" {
			t.Errorf("%s retry: counter %s, want 5", c.name, n)
		}
	}
}

// record moves the reserved commit of the layout keys to D; mark_committed then to C.
func TestLayoutRecordAndMark(t *testing.T) {
	rdb, ctx := coreClient(t), testCtx(t)
	k := newLayoutKeys(t)
	rat := time.Now().UnixMilli() - 5000
	rdb.Set(ctx, k.seq, 4, time.Minute)
	runOne(t, ctx, rdb, scripts.reserve, k.reserveArgs(rat))
	full := string(append(append([]byte(nil), layoutRecord...), 0x20, 5))

	rec := &recordArgs{Commit: k.commit, Seq: k.seq, ConversationID: layoutCID, HrecPrefix: k.hrec, HidxPrefix: k.hidx, BucketWidth: layoutWidth}
	want := commitReply{Kind: "E", storedCommit: storedCommit{St: "D", Mid: string(layoutMID), Seq: "5", Rec: full,
		Rat: strconv.FormatInt(rat, 10), Cid: string(layoutCID), Idn: string(layoutIdentity)}}
	for _, step := range []string{"record", "record retry"} {
		if got := runOne(t, ctx, rdb, scripts.record, rec); got != want {
			t.Errorf("%s: reply %+v, want %+v", step, got, want)
		}
		if r := rdb.Get(ctx, k.hrec+"5").Val(); r != full || rdb.ZScore(ctx, k.hidx+"1", "5").Val() != 5 {
			t.Errorf("%s: history record %q", step, r)
		}
	}

	cat, window := time.Now().UnixMilli(), int64(86_400_000)
	htrim := k.pending + ":htrim" // the test's keys share one prefix, not a hash tag
	// A second commit key that holds nothing: its error is its own result, the first still marks.
	missing := k.commit + ":missing"
	mark := &markArgs{Pending: k.pending, Commit: []string{k.commit, missing}, Owner: []string{k.owner, k.owner + ":m"},
		Shrunk: []string{k.shrunk, k.shrunk + ":m"}, Htrim: []string{htrim, htrim}, WindowMs: window,
		CommittedAtMs: []string{strconv.FormatInt(cat, 10), strconv.FormatInt(cat, 10)}, TrimConv: []string{"ab:cd", "ab:cd"}}
	wantMark := "C:" + strconv.FormatInt(cat, 10)
	if got := runOne(t, ctx, rdb, scripts.markCommitted, mark); len(got.Results) != 2 || got.Results[0] != wantMark ||
		!strings.HasPrefix(got.Results[1], "QIMNOTFOUND ") {
		t.Errorf("mark_committed: reply %+v, want %s and QIMNOTFOUND", got, wantMark)
	}
	h := rdb.HGetAll(ctx, k.commit).Val()
	if h["st"] != "C" || "C:"+h["cat"] != wantMark || h["rec"] != "" || h["rat"] != "" || len(h) != 6 {
		t.Errorf("committed hash %q", h)
	}
	for _, key := range []string{k.commit, k.owner} {
		if at := rdb.PExpireTime(ctx, key).Val(); at != time.Duration(cat+window)*time.Millisecond {
			t.Errorf("%s expires at %v, want committed_at + window", key, at)
		}
	}
	if err := rdb.ZScore(ctx, k.pending, k.commit).Err(); err == nil {
		t.Error("the commit is still in the recovery index")
	}
	if rdb.Exists(ctx, k.shrunk).Val() != 0 {
		t.Error("the shrunk hash outlived the mark")
	}
	// The trim candidate is trim_conv:seq scored by committed_at, on the first mark and after a
	// retry that brings another committed_at.
	checkCandidate := func(step string) {
		if z := rdb.ZRangeWithScores(ctx, htrim, 0, -1).Val(); len(z) != 1 || z[0].Member != "ab:cd:5" || int64(z[0].Score) != cat {
			t.Errorf("%s: trim candidates %v, want ab:cd:5 at %d", step, z, cat)
		}
	}
	checkCandidate("mark_committed")
	// A retry with another committed_at answers the original one.
	mark.CommittedAtMs = []string{strconv.FormatInt(cat+999, 10)}
	mark.Commit, mark.Owner, mark.Shrunk, mark.Htrim, mark.TrimConv = mark.Commit[:1], mark.Owner[:1], mark.Shrunk[:1], mark.Htrim[:1], mark.TrimConv[:1]
	if got := runOne(t, ctx, rdb, scripts.markCommitted, mark); len(got.Results) != 1 || got.Results[0] != wantMark {
		t.Errorf("mark_committed retry: reply %+v, want %s", got, wantMark)
	}
	checkCandidate("mark_committed retry")
	mark.TrimConv = []string{"ab:cd:5"}
	if got := runOne(t, ctx, rdb, scripts.markCommitted, mark); len(got.Results) != 1 || !strings.HasPrefix(got.Results[0], "QIMINVAL ") {
		t.Errorf("mark_committed with a malformed trim_conv = %+v, want QIMINVAL", got)
	}
}
