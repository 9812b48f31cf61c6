package room

import (
	"context"
	"testing"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/moderationtest"
	"github.com/qim-dev/qim/services/internal/rpc"
)

// withHook points a test service's pre-send hook at the stand-in (fail-closed unless open).
func withHook(hook *moderationtest.Server, open bool) func(*Config) {
	return func(c *Config) { c.Moderation.URL, c.Moderation.FailOpen = hook.URL(), open }
}

// Room SENDs go through the deployment's hook: a rejected one takes no room_seq and reaches
// nobody, a rewritten one is buffered rewritten, and its retry is recognised by the body the
// client sent (the first ack again, not CONFLICT).
func TestRoomPublishThroughTheHook(t *testing.T) {
	hook := moderationtest.New()
	defer hook.Close()
	s, _ := newTestService(t, withHook(hook, false))
	rid := freshRoom()
	first := mustPublish(t, s, publishOf(t, 1, rid, 1, "hello"))
	_, _, err := s.publish(context.Background(), publishOf(t, 1, rid, 2, moderationtest.RejectPrefix+" buy now"))
	if rpc.CodeOf(err) != contract.ErrCodeRejected || rpc.ReasonOf(err) != moderationtest.RejectReason {
		t.Fatalf("spam publish: %v (%s), want REJECTED with reason %q", err, rpc.ReasonOf(err), moderationtest.RejectReason)
	}
	rewritten := mustPublish(t, s, publishOf(t, 1, rid, 3, moderationtest.RewriteFrom))
	if rewritten.GetConversationSeq() != first.GetConversationSeq()+1 {
		t.Fatalf("room_seq %d after a rejected publish, want %d: the rejection consumed one",
			rewritten.GetConversationSeq(), first.GetConversationSeq()+1)
	}
	for _, down := range []bool{false, true} { // answered again, or not at all (no rewrite then)
		hook.SetDown(down)
		if again := mustPublish(t, s, publishOf(t, 1, rid, 3, moderationtest.RewriteFrom)); again.GetConversationSeq() != rewritten.GetConversationSeq() {
			t.Fatalf("retry of a rewritten publish (hook down %v): seq %d, want the first ack's %d", down,
				again.GetConversationSeq(), rewritten.GetConversationSeq())
		}
	}
	hook.SetDown(false)
	key, err := roomKeyOf(tenantBytes(), rid)
	if err != nil {
		t.Fatal(err)
	}
	var bodies []string
	if err := s.withRoom(key, s.now(), func(r *room) {
		for i := range r.ring.len() {
			bodies = append(bodies, string(r.ring.at(i).ev.GetBody()))
		}
	}); err != nil {
		t.Fatal(err)
	}
	if len(bodies) != 2 || bodies[1] != moderationtest.RewriteTo {
		t.Fatalf("buffered %q, want hello and the rewrite", bodies)
	}
}

// The hook down: fail-closed refuses UNAVAILABLE (a retry of a buffered event still gets its
// ack); fail-open lets the publish through.
func TestRoomPublishHookDown(t *testing.T) {
	hook := moderationtest.New()
	defer hook.Close()
	closed, _ := newTestService(t, withHook(hook, false))
	open, _ := newTestService(t, withHook(hook, true))
	room := freshRoom()
	buffered := mustPublish(t, closed, publishOf(t, 1, room, 1, "before"))
	hook.SetDown(true)
	if _, _, err := closed.publish(context.Background(), publishOf(t, 1, room, 2, "during")); rpc.CodeOf(err) != contract.ErrCodeUnavailable {
		t.Fatalf("fail-closed with the hook down: %v, want UNAVAILABLE", err)
	}
	if again := mustPublish(t, closed, publishOf(t, 1, room, 1, "before")); again.GetConversationSeq() != buffered.GetConversationSeq() {
		t.Fatal("a buffered event's retry was refused while the hook is down")
	}
	mustPublish(t, open, publishOf(t, 1, freshRoom(), 1, "during"))
}
