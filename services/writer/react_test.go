package writer

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/rpc"
)

// A REACT's key is 1..32 bytes of UTF-8 without control characters (the aggregate's separators
// are control characters), and it names exactly one target, never the reactor itself.
func TestParseReactRefusesBadKeysAndTargets(t *testing.T) {
	tenant := contract.U128{Lo: 1}.Bytes()
	parse := func(r *qimv1.React) error {
		raw, _ := proto.Marshal(r)
		_, err := parseReact(&internalv1.AuthenticatedReact{TenantId: tenant[:], ActorUserId: 7, React: raw})
		return err
	}
	peer := &qimv1.React_PeerUserId{PeerUserId: 8}
	if err := parse(&qimv1.React{Target: peer, TargetSeq: 3, Key: "👍"}); err != nil {
		t.Fatalf("a good REACT: %v", err)
	}
	for name, r := range map[string]*qimv1.React{
		"empty key":        {Target: peer, TargetSeq: 3},
		"long key":         {Target: peer, TargetSeq: 3, Key: strings.Repeat("x", contract.ReactionKeyMaxBytes+1)},
		"separator in key": {Target: peer, TargetSeq: 3, Key: "a\x1eb"},
		"invalid UTF-8":    {Target: peer, TargetSeq: 3, Key: "\xff"},
		"no target":        {TargetSeq: 3, Key: "ok"},
		"the reactor":      {Target: &qimv1.React_PeerUserId{PeerUserId: 7}, TargetSeq: 3, Key: "ok"},
		"seq zero":         {Target: peer, Key: "ok"},
		"not a group id":   {Target: &qimv1.React_GroupId{GroupId: []byte{1, 2}}, TargetSeq: 3, Key: "ok"},
	} {
		if err := parse(r); rpc.CodeOf(err) != contract.ErrCodeInvalidArgument {
			t.Errorf("%s: %v, want INVALID_ARGUMENT", name, err)
		}
	}
}
