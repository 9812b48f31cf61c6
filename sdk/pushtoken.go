package sdk

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
)

// RegisterPushToken asks the server to wake this device through its push provider while none of
// the user's devices is online (REGISTER_PUSH_TOKEN); an empty token removes the registration.
// The notification carries the conversation and message id, never the body: the app connects
// and the message arrives through the mailbox as always. Call it once connected, at every start
// and whenever the OS hands the app a new token (a registration expires 60 days after the last
// one); Logout removes it. Errors: ErrOffline without a connection, a *ServerError
// INVALID_ARGUMENT for an unknown platform or an oversized token.
func (c *Client) RegisterPushToken(ctx context.Context, platform contract.PushPlatform, token, appID string) error {
	payload, err := c.call(ctx, contract.OpRegisterPushToken, contract.OpPushTokenAck,
		&qimv1.RegisterPushToken{Platform: uint32(platform), Token: token, AppId: appID})
	if err != nil {
		return err
	}
	var ack qimv1.PushTokenAck
	if err := proto.Unmarshal(payload, &ack); err != nil {
		return fmt.Errorf("%w: PUSH_TOKEN_ACK: %v", ErrProtocol, err)
	}
	if ack.GetRegistered() != (token != "") {
		return fmt.Errorf("%w: PUSH_TOKEN_ACK registered=%v for a token of %d bytes", ErrProtocol, ack.GetRegistered(), len(token))
	}
	return nil
}
