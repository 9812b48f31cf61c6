package msgstore

import (
	"strings"
	"testing"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/keyfamily"
)

func TestKeyTagsMatchContract(t *testing.T) {
	for i := range contract.CommitBucketCount {
		if got, want := keyTags[i], contract.CommitBucket(i).KeyTag(); got != want {
			t.Fatalf("keyTags[%d] = %q, want %q", i, got, want)
		}
	}
}

// The key layout is a storage format: golden strings catch any drift.
func TestKeyLayoutGolden(t *testing.T) {
	tenant := contract.U128{Hi: 0x0102030405060708, Lo: 0x090a0b0c0d0e0f10}
	conv := contract.ConversationID{Hi: 0x2000000000000000, Lo: 42}
	k := CommitKey{Tenant: tenant, Sender: 12345, ClientMessageID: contract.ClientMessageID{Hi: 0, Lo: 0xabc}, Conversation: conv}
	tag := contract.ConversationCommitBucket(tenant, conv).KeyTag()
	wantCommit := "qim:cmt:" + tag + ":0102030405060708090a0b0c0d0e0f10:12345:00000000000000000000000000000abc"
	if got := commitKey(k); got != wantCommit {
		t.Errorf("commitKey = %q, want %q", got, wantCommit)
	}
	if got, want := shrunkKey(wantCommit), "qim:cmtshrunk:"+wantCommit[len("qim:cmt:"):]; got != want {
		t.Errorf("shrunkKey = %q, want %q", got, want)
	}
	ck := newConvKeys(tenant, conv)
	suffix := tag + ":0102030405060708090a0b0c0d0e0f10:2000000000000000000000000000002a"
	for name, pair := range map[string][2]string{
		"seq":  {ck.seq, "qim:cseq:" + suffix},
		"hrec": {string(appendNumKey(nil, ck.hrec, 1025)), "qim:hrec:" + suffix + ":1025"},
		"hidx": {string(appendNumKey(nil, ck.hidx, 1)), "qim:hidx:" + suffix + ":1"},
	} {
		if pair[0] != pair[1] {
			t.Errorf("%s key = %q, want %q", name, pair[0], pair[1])
		}
	}
}

func TestParseCommitKey(t *testing.T) {
	tenant := contract.U128{Hi: 7, Lo: 8}
	k := CommitKey{Tenant: tenant, Sender: 1<<64 - 1, ClientMessageID: contract.ClientMessageID{Hi: 1, Lo: 2},
		Conversation: contract.ConversationID{Hi: 0x1000000000000000, Lo: 9}}
	p, err := parseCommitKey(commitKey(k))
	if err != nil {
		t.Fatal(err)
	}
	if p.tenant != k.Tenant || p.sender != k.Sender || p.cmid != k.ClientMessageID ||
		p.tag != tagOf(k.Tenant, k.Conversation) {
		t.Errorf("round trip = %+v, want %+v", p, k)
	}
	good := commitKey(k)
	for _, bad := range []string{
		"", "qim:cmt:", strings.TrimPrefix(good, "qim:"), good + ":x",
		strings.Replace(good, ":18446744073709551615:", ":-1:", 1),
		strings.Replace(good, ":18446744073709551615:", ":18446744073709551616:", 1),
		good[:len(good)-1], good[:len(good)-1] + "g",
	} {
		if _, err := parseCommitKey(bad); err == nil {
			t.Errorf("parseCommitKey(%q) accepted", bad)
		}
	}
}

// Every key this package builds belongs to exactly the family declared for it; a neighbouring
// layout belongs to none, so an unknown key in the gate's scan really is unknown.
func TestKeyFamiliesClassifyBuiltKeys(t *testing.T) {
	fams := KeyFamilies()
	for _, f := range fams {
		if err := f.Validate(); err != nil {
			t.Error(err)
		}
	}
	k := CommitKey{Tenant: contract.U128{Hi: 7, Lo: 8}, Sender: 1<<64 - 1, ClientMessageID: contract.ClientMessageID{Hi: 1, Lo: 2},
		Conversation: contract.ConversationID{Hi: 0x1000000000000000, Lo: 9}}
	ck := newConvKeys(k.Tenant, k.Conversation)
	for key, want := range map[string]string{
		commitKey(k):                          "msgstore.commit",
		shrunkKey(commitKey(k)):               "msgstore.commit_shrunk",
		ownerKey(k):                           "msgstore.cmid_owner",
		ck.seq:                                "msgstore.conversation_seq",
		string(appendNumKey(nil, ck.hidx, 0)): "msgstore.history_index",
		string(appendNumKey(nil, ck.hrec, 1)): "msgstore.history_record",
		pendingKey:                            "msgstore.recovery_index",
		ck.hrec:                               "",
		ck.seq + ":1":                         "",
		pendingKey + ":x":                     "",
		strings.Replace(commitKey(k), "{b", "{s", 1): "",
	} {
		got := keyfamily.MatchingNames(fams, key)
		if (want == "" && len(got) != 0) || (want != "" && (len(got) != 1 || got[0] != want)) {
			t.Errorf("%q belongs to %v, want %q", key, got, want)
		}
	}
}
