package session

import (
	"errors"
	"strconv"
	"testing"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/keyfamily"
)

// The apply script: activity only grows (ZADD GT, so a late older record never moves a row
// back), the sender's watermark only grows, the checkpoint moves by compare-and-set (a retry of
// an applied record is a no-op; any other expected value is fenced), and a checkpoint bound to
// another topic id refuses every write.
func TestApplyScript(t *testing.T) {
	e := newEnv(t, 1)
	st := newStore(e.rdb, e.topic, 1)
	live := binding{cluster: "c", topicID: "0123456789abcdef0123456789abcdef", partitions: 1}
	if _, fresh, err := st.bind(e.ctx, live); err != nil || !fresh {
		t.Fatalf("bind = %v fresh %v", err, fresh)
	}
	if got, fresh, err := st.bind(e.ctx, binding{cluster: "x", topicID: "ffffffffffffffffffffffffffffffff", partitions: 9}); err != nil ||
		fresh || got != live {
		t.Fatalf("second bind = %+v %v %v, want the first binding kept", got, fresh, err)
	}
	alice, bob := e.user(), e.user()
	conv := e.conv(alice, bob)
	lists := []string{listKey(e.key(alice)), listKey(e.key(bob))}
	call := func(prev, next string, score, seq uint64) applyCall {
		return applyCall{part: 0, prev: prev, next: next, score: score, conv: conv, lists: lists, readKey: readKey(e.key(alice)), seq: seq}
	}
	steps := []struct {
		name   string
		c      applyCall
		topic  string
		fenced bool
		score  uint64
		read   uint64
	}{
		{"first", call("", "1", 500, 4), live.topicID, false, 500, 4},
		{"older activity and seq arrive late", call("1", "2", 300, 2), live.topicID, false, 500, 4},
		{"retry of an applied record", call("1", "2", 900, 9), live.topicID, false, 500, 4},
		{"wrong expected checkpoint", call("7", "8", 900, 9), live.topicID, true, 500, 4},
		{"bound to another topic", call("2", "3", 900, 9), "ffffffffffffffffffffffffffffffff", true, 500, 4},
		{"newer", call("2", "3", 900, 9), live.topicID, false, 900, 9},
	}
	for _, s := range steps {
		n, err := st.apply(e.ctx, s.topic, []applyCall{s.c})
		var fe *FencedError
		if s.fenced != errors.As(err, &fe) || (!s.fenced && (err != nil || n != 1)) {
			t.Fatalf("%s: apply = %d, %v (fenced expected %v)", s.name, n, err, s.fenced)
		}
		for _, u := range []userKey{e.key(alice), e.key(bob)} {
			rows, ok, err := st.scores(e.ctx, u, []contract.ConversationID{conv})
			if err != nil || !ok[0] || rows[0].score != s.score {
				t.Fatalf("%s: user %d row %v ok %v err %v, want score %d", s.name, u.user, rows, ok, err, s.score)
			}
		}
		reads, err := st.readSeqs(e.ctx, e.key(alice), []contract.ConversationID{conv})
		if err != nil || reads[0] != s.read {
			t.Fatalf("%s: sender watermark %v %v, want %d", s.name, reads, err, s.read)
		}
	}
	if reads, _ := st.readSeqs(e.ctx, e.key(bob), []contract.ConversationID{conv}); reads[0] != 0 {
		t.Fatalf("a recipient's watermark moved: %v", reads)
	}
	if cps, err := st.checkpoints(e.ctx); err != nil || cps[0] != 3 {
		t.Fatalf("checkpoint = %v %v, want 3", cps, err)
	}
}

// Every key this package builds belongs to exactly the family declared for it, and the
// gateway's session_epoch layout (qim:sess:<tenant>:<user>:<device>) to none of them.
func TestKeyFamiliesClassifyBuiltKeys(t *testing.T) {
	fams := KeyFamilies()
	for _, f := range fams {
		if err := f.Validate(); err != nil {
			t.Error(err)
		}
	}
	k := userKey{contract.TenantID{Hi: 0x0102030405060708, Lo: 9}, 1<<64 - 1}
	for key, want := range map[string]string{
		listKey(k): "session.list",
		readKey(k): "session.read",
		newStore(nil, contract.TopicDispatch, 1).ckpt:                          "session.checkpoint",
		"qim:sess:01020304050607080000000000000009:18446744073709551615:phone": "",
		listKey(k) + ":x": "",
	} {
		got := keyfamily.MatchingNames(fams, key)
		if (want == "" && len(got) != 0) || (want != "" && (len(got) != 1 || got[0] != want)) {
			t.Errorf("%q belongs to %v, want %q", key, got, want)
		}
	}
}

// A poll of records over two partitions, more than one apply.lua call holds: every list ends at
// each conversation's largest activity, the sender's watermark at its largest seq, each
// checkpoint at its partition's last offset + 1; its last apply.lua call again (a re-send)
// changes nothing; a poll in
// which one record expects another checkpoint is refused whole (fenced, naming that record) and
// writes nothing, not even the records before it.
func TestApplyBatches(t *testing.T) {
	e := newEnv(t, 2)
	st := newStore(e.rdb, e.topic, 2)
	live := binding{cluster: "c", topicID: "0123456789abcdef0123456789abcdef", partitions: 2}
	if _, _, err := st.bind(e.ctx, live); err != nil {
		t.Fatal(err)
	}
	alice, bob, carol := e.user(), e.user(), e.user()
	convs := []contract.ConversationID{e.conv(alice, bob), e.conv(alice, carol)}
	prev := []string{"", ""}
	var cs []applyCall
	wantScore, wantRead := map[contract.ConversationID]uint64{}, map[contract.ConversationID]uint64{}
	for i := range 2*applyBatchMax + 7 {
		part, conv := int32(i%2), convs[(i/2)%2]
		score, seq := uint64(1000+(i*7919)%5000), uint64(1+(i*104729)%900)
		next := strconv.Itoa(i/2 + 1)
		peer := bob
		if conv == convs[1] {
			peer = carol
		}
		cs = append(cs, applyCall{part: part, offset: int64(i / 2), prev: prev[part], next: next, score: score, conv: conv,
			lists: []string{listKey(e.key(alice)), listKey(e.key(peer))}, readKey: readKey(e.key(alice)), seq: seq})
		prev[part] = next
		wantScore[conv], wantRead[conv] = max(wantScore[conv], score), max(wantRead[conv], seq)
	}
	check := func(when string) {
		t.Helper()
		rows, ok, err := st.scores(e.ctx, e.key(alice), convs)
		reads, rerr := st.readSeqs(e.ctx, e.key(alice), convs)
		if err != nil || rerr != nil {
			t.Fatalf("%s: %v %v", when, err, rerr)
		}
		for j, c := range convs {
			if !ok[j] || rows[j].score != wantScore[c] || reads[j] != wantRead[c] {
				t.Fatalf("%s: conversation %d score %d read %d, want %d and %d", when, j, rows[j].score, reads[j], wantScore[c], wantRead[c])
			}
		}
		last := strconv.Itoa(len(cs)/2 + len(cs)%2)
		if cps, err := st.checkpoints(e.ctx); err != nil || strconv.FormatInt(cps[0], 10) != last || strconv.FormatInt(cps[1], 10) != strconv.Itoa(len(cs)/2) {
			t.Fatalf("%s: checkpoints %v %v", when, cps, err)
		}
	}
	for _, run := range []struct {
		when string
		recs []applyCall
	}{{"first", cs}, {"the last call repeated", cs[2*applyBatchMax:]}} {
		if n, err := st.apply(e.ctx, live.topicID, run.recs); err != nil || n != len(run.recs) {
			t.Fatalf("%s: apply = %d, %v", run.when, n, err)
		}
		check(run.when)
	}
	bad := []applyCall{
		{part: 0, offset: 500, prev: prev[0], next: "501", score: 1 << 40, conv: convs[0], lists: cs[0].lists, readKey: cs[0].readKey, seq: 5000},
		{part: 1, offset: 600, prev: "599", next: "601", score: 1 << 40, conv: convs[1], lists: cs[1].lists},
	}
	n, err := st.apply(e.ctx, live.topicID, bad)
	var fe *FencedError
	if n != 0 || !errors.As(err, &fe) || fe.Partition != 1 || fe.Offset != 600 {
		t.Fatalf("fenced poll: apply = %d, %v; want 0 and a FencedError at 1/600", n, err)
	}
	check("after the fenced poll")
}
