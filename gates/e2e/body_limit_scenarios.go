package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/qim-dev/qim/contract"
)

// scenarioBodyOverOutboxRecord: a body that fits the wire's message limit but not one Outbox
// record (1,000,000 bytes with the stored message around it) is refused with PAYLOAD_TOO_LARGE
// before anything is reserved: nothing appears in history, the connection stays usable, and a
// body that fits commits. Before the writer counted the record, such a SEND was reserved and
// recorded, then answered UNAVAILABLE on every retry because the producer refused the record.
// A body that fits still reaches the recipient, and a SEND of the wire's whole message limit is
// refused the same way (it must reach the writer's check, not its transport's limit).
func scenarioBodyOverOutboxRecord(ctx context.Context, e *Env) error {
	alice, bob := e.User(), e.User()
	c, _, err := e.Login(ctx, alice, "a1", 0)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Send(ctx, bob, NewCmid(), make([]byte, 999_900))
	var se *ServerError
	if !errors.As(err, &se) || se.Code != contract.ErrCodePayloadTooLarge || !strings.Contains(se.Msg, "Outbox record") {
		return fmt.Errorf("a 999,900-byte body: %v, want ERROR PAYLOAD_TOO_LARGE naming the Outbox record", err)
	}
	// A SEND as large as one client message may be: the gateway forwards it to the writer with
	// the sender's identity around it, which must not trip the writer's gRPC receive limit.
	_, err = c.Send(ctx, bob, NewCmid(), make([]byte, contract.MaxFramePayload-64))
	if !errors.As(err, &se) || se.Code != contract.ErrCodePayloadTooLarge {
		return fmt.Errorf("a body of the wire's message limit less 64 bytes: %v, want ERROR PAYLOAD_TOO_LARGE", err)
	}
	ack, err := c.Send(ctx, bob, NewCmid(), make([]byte, 900_000))
	if err != nil {
		return fmt.Errorf("a 900,000-byte body after the refusal: %w", err)
	}
	if ack.GetConversationSeq() != 1 {
		return fmt.Errorf("the refused SEND consumed a sequence: the next one committed at seq %d, want 1", ack.GetConversationSeq())
	}
	// The large message that fits travels the whole path: Outbox, dispatch log, Bob's mailbox.
	cb, _, err := e.Login(ctx, bob, "b1", 0)
	if err != nil {
		return err
	}
	defer cb.Close()
	if _, _, err := PullUntil(ctx, cb, 0, HasMessage(ack.GetMessageId())); err != nil {
		return fmt.Errorf("the 900,000-byte message did not reach the recipient's mailbox: %w", err)
	}
	return nil
}
