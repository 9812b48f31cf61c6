package sdk

// App requests answered by one frame: PULL_MEMBERS → MEMBERS_BATCH, LEAVE_GROUP →
// LEAVE_GROUP_ACK and REGISTER_PUSH_TOKEN → PUSH_TOKEN_ACK. The calling goroutine builds the
// request and interprets the answer (paging, for one, is the caller's loop in groups.go); the
// connection goroutine only writes the frame and hands back the answer, so it keeps no per-call
// state beyond the request id. None of these requests touches the store or the cursor, and none
// is retried by the SDK: they need the server now, and a caller that is offline learns
// ErrOffline at once instead of waiting for a connection.

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/wire"
)

// rpcCmd is one app request handed to the connection goroutine.
type rpcCmd struct {
	op    contract.Opcode // the request
	want  contract.Opcode // the answer it expects (anything else is a protocol violation)
	msg   proto.Message
	reply chan rpcResult // capacity 1: the loop never blocks on a caller that gave up
}

type rpcResult struct {
	payload []byte
	err     error
}

// startRPC writes the request, or answers ErrOffline when there is no authenticated connection.
func (e *engine) startRPC(cmd *rpcCmd, now time.Time) {
	if !e.online || e.sink == nil || e.end != nil {
		cmd.reply <- rpcResult{err: ErrOffline}
		return
	}
	if e.request(reqRPC, cmd.op, cmd.msg, now, &request{rpc: cmd}) == 0 {
		cmd.reply <- rpcResult{err: ErrOffline}
	}
}

// onRPCAnswer hands an answer to the request it names.
func (e *engine) onRPCAnswer(m wire.Message) {
	r := e.take(m.RequestID, reqRPC)
	if r == nil {
		e.log.Debug("sdk: answer for no request", "opcode", m.Opcode.String())
		return
	}
	if m.Opcode != r.rpc.want {
		err := fmt.Errorf("%w: %s answered with %s", ErrProtocol, r.rpc.op, m.Opcode)
		r.rpc.reply <- rpcResult{err: err}
		e.fail(err)
		return
	}
	r.rpc.reply <- rpcResult{payload: m.Payload}
}

// call sends one request through the connection goroutine and waits for its answer. It returns
// ErrOffline when the client is not connected or the connection ends first.
func (c *Client) call(ctx context.Context, op, want contract.Opcode, msg proto.Message) ([]byte, error) {
	c.mu.Lock()
	closed, done := c.closed, c.loopDone
	c.mu.Unlock()
	switch {
	case closed:
		return nil, ErrClosed
	case done == nil:
		return nil, ErrOffline
	}
	cmd := &rpcCmd{op: op, want: want, msg: msg, reply: make(chan rpcResult, 1)}
	select {
	case c.rpcs <- cmd:
	case <-done:
		return nil, ErrOffline
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case r := <-cmd.reply:
		return r.payload, r.err
	case <-done:
		return nil, ErrOffline
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
