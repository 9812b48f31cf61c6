package session

import (
	"errors"
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
