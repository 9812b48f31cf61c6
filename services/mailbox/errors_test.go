package mailbox

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/rpc"
	"github.com/qim-dev/qim/services/internal/shardset"
	"github.com/qim-dev/qim/services/mailbox/mailboxstore"
)

// The codes a pull can end with: bad input is INVALID_ARGUMENT, a stored entry that does not
// decode is INTERNAL (the pull fails as a whole), a mailbox Redis that does not answer is
// UNAVAILABLE (retryable). The client's message never carries the storage error.
func TestPullOutcomeCodes(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	if err := rdb.Close(); err != nil { // every call now fails at once, without a network
		t.Fatal(err)
	}
	s := &Service{cfg: Config{ShardCount: 64, OwnedShards: shardset.All(64)}, log: discardLog(), m: newMetrics(newTestRegistry()),
		store: mailboxstore.New(rdb, 64)}
	g := grpcServer{s: s}
	tenant := contract.U128{Hi: 1, Lo: 1}.Bytes()
	req, err := proto.Marshal(&qimv1.PullMailbox{})
	if err != nil {
		t.Fatal(err)
	}
	out := g.outcomes(context.Background(), []*internalv1.AuthenticatedPullMailbox{
		{TenantId: tenant[:1], UserId: 7, DeviceId: "d", PullMailbox: req},
		{TenantId: tenant[:], UserId: 7, DeviceId: "d", PullMailbox: req},
	})
	if c := contract.ErrorCode(out[0].GetErrorCode()); c != contract.ErrCodeInvalidArgument {
		t.Errorf("bad tenant: %v", c)
	}
	if c := contract.ErrorCode(out[1].GetErrorCode()); c != contract.ErrCodeUnavailable || strings.Contains(out[1].GetErrorMessage(), "redis") {
		t.Errorf("closed redis: %v %q", c, out[1].GetErrorMessage())
	}
	if !s.pullFailing.Load() {
		t.Error("a failing round trip did not mark pulls failing")
	}
	_, err = batchOf(mailboxstore.PullResult{Entries: []mailboxstore.StoredEntry{{Seq: 5, Value: []byte{0xff}}}})
	if !errors.Is(err, ErrCorruptEntry) || rpc.CodeOf(err) != contract.ErrCodeInternal {
		t.Errorf("undecodable entry: %v (%v)", err, rpc.CodeOf(err))
	}
	if _, err := s.hasOffline(context.Background(), &internalv1.OfflineQuery{TenantId: tenant[:], UserId: 7}); rpc.CodeOf(err) != contract.ErrCodeUnavailable {
		t.Errorf("offline check on a closed redis: %v (%v)", err, rpc.CodeOf(err))
	}
}
