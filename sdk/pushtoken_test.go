package sdk

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
)

// REGISTER_PUSH_TOKEN goes out with the platform, token and app id, and its PUSH_TOKEN_ACK
// reaches the caller.
func TestRegisterPushTokenRoundTrip(t *testing.T) {
	h := newHarness(t)
	h.connect()
	c := &rpcCmd{op: contract.OpRegisterPushToken, want: contract.OpPushTokenAck,
		msg: &qimv1.RegisterPushToken{Platform: uint32(contract.PushAPNs), Token: "ab", AppId: "app"}, reply: make(chan rpcResult, 1)}
	h.e.startRPC(c, h.now)
	f := h.lastSent(contract.OpRegisterPushToken)
	var sent qimv1.RegisterPushToken
	if err := proto.Unmarshal(f.payload, &sent); err != nil || sent.GetPlatform() != 2 || sent.GetToken() != "ab" || sent.GetAppId() != "app" {
		t.Fatalf("sent %v (%v)", &sent, err)
	}
	h.frame(contract.OpPushTokenAck, f.id, &qimv1.PushTokenAck{Registered: true})
	if len(c.reply) != 1 { // the engine is synchronous: the answer is there or it was dropped
		t.Fatal("PUSH_TOKEN_ACK did not reach the caller")
	}
	r := <-c.reply
	var ack qimv1.PushTokenAck
	if r.err != nil || proto.Unmarshal(r.payload, &ack) != nil || !ack.GetRegistered() {
		t.Fatalf("answer %+v", r)
	}
}
