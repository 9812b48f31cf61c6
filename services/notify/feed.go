package notify

// The post-send feed (the ModerationService's asynchronous half, issue 40 item 1): every
// committed message of the configured tenants, read from qim.outbox, produced to the topic the
// product is given as a qim.v1 FeedMessage keyed by conversation_id. It runs in the
// NotificationService's process because both are off-path readers of the log that serve the
// product; it shares nothing with the push loop but the process.
//
// Invariants: at least once — the qim.outbox position (under QIM_NOTIFY_FEED_GROUP) is stored
// only after every record of the batch was acknowledged by the brokers (acks=all, idempotent
// producer), so a crash or a failed produce sends the batch again, never skips it; a first start
// begins at the log's end (the feed is of messages committed while it runs, not of history).
// Never on the commit path: the writer does not know the feed exists.
//
// Rejected: producing the feed from the writer or the fanout (one more produce per message on
// the path a SEND waits on, or on the fanout's batch), and exposing qim.outbox itself (its
// records are the internal CommittedEnvelope, whose layout may change with any release).

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/backoff"
	"github.com/qim-dev/qim/services/internal/commitlog"
)

// feed copies committed messages from qim.outbox to the feed topic.
type feed struct {
	consumer *commitlog.PartitionConsumer
	producer *kgo.Client
	pos      positions
	topic    string
	tenants  map[contract.TenantID]bool // nil: every tenant
	retry    *backoff.Backoff
	m        *metrics
	log      *slog.Logger
}

func (f *feed) run(ctx context.Context) error {
	for {
		recs, err := f.consumer.Poll(ctx, pollMax)
		if ctx.Err() != nil {
			return nil //nolint:nilerr // a stop: the position holds what was produced
		}
		if len(recs) > 0 {
			f.batch(ctx, recs)
		}
		if err != nil {
			return fmt.Errorf("notify: feed: qim.outbox: %w", err)
		}
	}
}

// batch produces one poll's messages and stores the position after them, retrying the whole
// batch until both succeed (the idempotent producer and the consumer's dedup by message_id make
// a repeat harmless) or ctx ends.
func (f *feed) batch(ctx context.Context, recs []commitlog.Record) {
	out := f.records(recs)
	next := recs[len(recs)-1].Offset + 1
	for {
		err := f.producer.ProduceSync(ctx, out...).FirstErr()
		if err == nil {
			err = f.pos.Commit(ctx, recs[0].Partition, next)
		}
		if err == nil {
			f.retry.Reset()
			f.m.feed.Add(float64(len(out)))
			return
		}
		if ctx.Err() != nil {
			return
		}
		f.m.feedFailures.Inc()
		f.log.Warn("notify: feed batch failed, retrying", "records", len(out), "err", err)
		select {
		case <-time.After(f.retry.Next()):
		case <-ctx.Done():
			return
		}
	}
}

// records turns the batch's envelopes into feed records, the tenants' only. An envelope that
// does not decode is counted and skipped (the fanout, which must dispatch it, fails closed on it).
func (f *feed) records(recs []commitlog.Record) []*kgo.Record {
	out := make([]*kgo.Record, 0, len(recs))
	for _, r := range recs {
		env := &internalv1.CommittedEnvelope{}
		if err := proto.Unmarshal(r.Value, env); err != nil || env.GetRecord() == nil {
			f.m.badRecords.Inc()
			continue
		}
		rec := env.GetRecord()
		tenant, err := contract.U128FromBytes(rec.GetTenantId())
		if err != nil {
			f.m.badRecords.Inc()
			continue
		}
		if f.tenants != nil && !f.tenants[tenant] {
			continue
		}
		v, err := proto.Marshal(feedMessage(env))
		if err != nil {
			f.m.badRecords.Inc()
			continue
		}
		out = append(out, &kgo.Record{Topic: f.topic, Key: rec.GetConversationId(), Value: v})
	}
	return out
}

func feedMessage(env *internalv1.CommittedEnvelope) *qimv1.FeedMessage {
	r := env.GetRecord()
	body := r.GetBody()
	if body == nil {
		body = []byte{} // present: an empty body, not a withheld one
	}
	return &qimv1.FeedMessage{TenantId: r.GetTenantId(), ConversationKind: r.GetConversationKind(),
		PeerUserId: r.GetDirectPeerUserId(), SenderDeviceId: r.GetSenderDeviceId(), CommittedAtMs: env.GetCommittedAtMs(),
		Message: &qimv1.HistoryMessage{MessageId: r.GetMessageId(), ConversationId: r.GetConversationId(),
			ConversationSeq: r.GetConversationSeq(), SenderUserId: r.GetSenderUserId(), MessageType: r.GetMessageType(),
			CustomType: r.GetCustomType(), Body: body, SentAtMs: r.GetCreatedAtMs(), Mentions: r.GetMentions(),
			Flags: r.GetFlags(), ClientMessageId: r.GetClientMessageId()}}
}
