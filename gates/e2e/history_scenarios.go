package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
)

// scenarioHistoryDirectionUnset: PULL_HISTORY with direction 0, what a client that omits the
// field sends, is served as OLDER (history.proto, docs/protocol.md §7.6): the page just below the
// anchor, the newest page when the anchor is unset too, the same answer as an explicit OLDER;
// any other value but 1 and 2 is INVALID_ARGUMENT. The writer decides what direction means and
// the gateway only forwards it, so only the pair, over the client wire, shows what a client gets.
func scenarioHistoryDirectionUnset(ctx context.Context, e *Env) error {
	alice, bob := e.User(), e.User()
	c, _, err := e.Login(ctx, alice, "a1", 0)
	if err != nil {
		return err
	}
	defer c.Close()
	var conv []byte
	for i := 1; i <= 5; i++ { // fresh users: a fresh conversation holding seqs 1..5
		ack, err := c.Send(ctx, bob, NewCmid(), []byte{byte(i)})
		if err != nil {
			return err
		}
		if ack.GetConversationSeq() != uint64(i) {
			return fmt.Errorf("SEND %d acknowledged at seq %d", i, ack.GetConversationSeq())
		}
		conv = ack.GetConversationId()
	}
	for _, tc := range []struct {
		anchor   uint64
		want     []uint64 // OLDER's answer; NEWER's would be [1 2] and [4 5]
		wantMore bool
	}{
		{0, []uint64{4, 5}, true}, // no anchor either: the newest page
		{3, []uint64{1, 2}, false},
	} {
		unset, err := c.PullHistory(ctx, conv, tc.anchor, 0, 2)
		if err != nil {
			return fmt.Errorf("direction 0 from anchor %d: %w", tc.anchor, err)
		}
		if got := historySeqs(unset); !slices.Equal(got, tc.want) || unset.GetHasMore() != tc.wantMore {
			return fmt.Errorf("direction 0 from anchor %d: seqs %v has_more %v, want OLDER's %v has_more %v",
				tc.anchor, got, unset.GetHasMore(), tc.want, tc.wantMore)
		}
		older, err := c.PullHistory(ctx, conv, tc.anchor, historyOlder, 2)
		if err != nil {
			return err
		}
		if !proto.Equal(unset, older) {
			return fmt.Errorf("direction 0 from anchor %d answered %v, explicit OLDER %v", tc.anchor, unset, older)
		}
	}
	_, err = c.PullHistory(ctx, conv, 0, 3, 2)
	var se *ServerError
	if !errors.As(err, &se) || se.Code != contract.ErrCodeInvalidArgument {
		return fmt.Errorf("direction 3: %v, want ERROR INVALID_ARGUMENT", err)
	}
	return nil
}

func historySeqs(b *qimv1.HistoryBatch) []uint64 {
	var out []uint64
	for _, r := range b.GetRecords() {
		out = append(out, r.GetConversationSeq())
	}
	return out
}
