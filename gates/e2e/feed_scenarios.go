package e2e

import (
	"context"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
)

// NeedsFeed: the scenario needs a NotificationService writing the post-send feed to qim.feed.
const NeedsFeed = "a NotificationService writing the post-send feed (QIM_NOTIFY_FEED_TOPIC)"

// Every message a sender is acknowledged appears on the post-send feed with its coordinates and
// body, keyed by its conversation, within feedWithin.
const feedWithin = 15 * time.Second

func scenarioFeed(ctx context.Context, e *Env) error {
	cl, err := e.kafka()
	if err != nil {
		return err
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, contract.TopicFeed)
	if err != nil {
		return fmt.Errorf("feed end offsets: %w", err)
	}
	from := map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) { from[o.Partition] = kgo.NewOffset().At(o.Offset) })
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{contract.TopicFeed: from})
	alice, bob := e.User(), e.User()
	a, _, err := e.Login(ctx, alice, "phone", 0)
	if err != nil {
		return err
	}
	defer a.Close()
	want := map[string]string{} // message id → body
	for i := range 3 {
		body := fmt.Sprintf("for the feed %d", i)
		ack, err := a.Send(ctx, bob, NewCmid(), []byte(body))
		if err != nil {
			return err
		}
		want[hex.EncodeToString(ack.GetMessageId())] = body
	}
	conv := contract.DirectConversationID(e.Tenant, alice, bob).Bytes()
	wctx, cancel := context.WithTimeout(ctx, feedWithin)
	defer cancel()
	for len(want) > 0 {
		fs := cl.PollFetches(wctx)
		if wctx.Err() != nil {
			return fmt.Errorf("%d of 3 acknowledged messages not on %s within %v", len(want), contract.TopicFeed, feedWithin)
		}
		var bad error
		fs.EachRecord(func(r *kgo.Record) {
			var m qimv1.FeedMessage
			if proto.Unmarshal(r.Value, &m) != nil {
				bad = fmt.Errorf("a feed record that is no FeedMessage")
				return
			}
			id := hex.EncodeToString(m.GetMessage().GetMessageId())
			body, ok := want[id]
			if !ok {
				return // another scenario's message
			}
			if string(m.GetMessage().GetBody()) != body || string(r.Key) != string(conv[:]) || m.GetPeerUserId() != uint64(bob) ||
				m.GetMessage().GetSenderUserId() != uint64(alice) || m.GetConversationKind() != uint32(contract.KindDirect) {
				bad = fmt.Errorf("feed record of %s: %v (key %x)", id, &m, r.Key)
			}
			delete(want, id)
		})
		if bad != nil {
			return bad
		}
	}
	return nil
}
