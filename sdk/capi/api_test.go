package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/sdk"
)

// Ids above 2^53 travel as strings with every digit: a JSON number would reach a C, Swift or
// JavaScript caller as a double and lose the low bits.
func TestIdsTravelExactly(t *testing.T) {
	conv := contract.ConversationID{Hi: math.MaxUint64, Lo: math.MaxUint64}
	m := sdk.Message{ID: contract.MessageID{Hi: math.MaxUint64, Lo: math.MaxUint64}, Conversation: conv,
		Seq: contract.ConversationSeq(1<<53 + 1), Sender: contract.UserID(math.MaxUint64), Body: []byte("hi"), HasBody: true}
	s, err := eventJSON(sdk.MessagesAdded{Messages: []sdk.Message{m}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"type":"messages_added"`, `"id":"ffffffffffffffffffffffffffffffff"`,
		`"seq":"9007199254740993"`, `"sender":"18446744073709551615"`, `"body_b64":"aGk="`} {
		if !strings.Contains(s, want) {
			t.Errorf("%s lacks %s", s, want)
		}
	}
	var back struct {
		Messages []struct{ Seq, Sender string } `json:"messages"`
	}
	if err := json.Unmarshal([]byte(s), &back); err != nil || back.Messages[0].Seq != "9007199254740993" {
		t.Fatalf("%s decodes to %+v (%v)", s, back, err)
	}
}

// Every event type has its own "type"; none falls through to "unknown".
func TestEveryEventHasItsType(t *testing.T) {
	evs := map[string]sdk.Event{"online": sdk.Online{}, "offline": sdk.Offline{}, "messages_added": sdk.MessagesAdded{},
		"conversations_updated": sdk.ConversationsUpdated{}, "committed": sdk.Committed{}, "failed": sdk.Failed{},
		"kicked": sdk.Kicked{}, "sync_progress": sdk.SyncProgress{}, "local_store_reset": sdk.LocalStoreReset{},
		"group_created": sdk.GroupCreated{}, "group_create_failed": sdk.GroupCreateFailed{},
		"membership_changed": sdk.MembershipChanged{}, "room_joined": sdk.RoomJoined{}, "room_events": sdk.RoomEvents{},
		"room_left": sdk.RoomLeft{}, "typing": sdk.Typing{}, "read_receipt": sdk.ReadReceipt{},
		"reaction_changed": sdk.ReactionChanged{}}
	for want, ev := range evs {
		s, err := eventJSON(ev)
		if err != nil || !strings.Contains(s, `"type":"`+want+`"`) {
			t.Errorf("%T: %s (%v), want type %s", ev, s, err, want)
		}
	}
}

// A configuration is refused with QIM_E_INVALID and a reason: unknown fields, a user that is no
// decimal u64, a missing token, a relative data dir.
func TestConfigRefusals(t *testing.T) {
	good := `{"data_dir":"/tmp/x","gateway":"127.0.0.1:7000","user":"42","device":"d","token":"t"}`
	if _, err := parseConfig(good); err != nil {
		t.Fatalf("good config refused: %v", err)
	}
	for name, cfg := range map[string]string{
		"unknown field":     `{"data_dir":"/tmp/x","gateway":"127.0.0.1:7000","user":"42","device":"d","token":"t","tokn":"x"}`,
		"user as a number":  `{"data_dir":"/tmp/x","gateway":"127.0.0.1:7000","user":42,"device":"d","token":"t"}`,
		"user zero":         `{"data_dir":"/tmp/x","gateway":"127.0.0.1:7000","user":"0","device":"d","token":"t"}`,
		"no token":          `{"data_dir":"/tmp/x","gateway":"127.0.0.1:7000","user":"42","device":"d"}`,
		"relative data dir": `{"data_dir":"x","gateway":"127.0.0.1:7000","user":"42","device":"d","token":"t"}`,
		"not json":          `data_dir=/tmp/x`,
	} {
		_, err := parseConfig(cfg)
		if codeOf(err) != codeInvalid {
			t.Errorf("%s: %v (code %d), want QIM_E_INVALID", name, err, codeOf(err))
		}
	}
}

// A handle never opened, or already closed, is QIM_E_HANDLE for every call.
func TestUnknownHandle(t *testing.T) {
	for name, err := range map[string]error{
		"close":   closeClient(999),
		"connect": connect(999),
		"event":   func() error { _, err := nextEvent(999, 0); return err }(),
		"send":    func() error { _, err := send(999, "1", nil); return err }(),
		"room":    func() error { _, err := joinRoom(999, strings.Repeat("1", 32), false, 0, 0); return err }(),
	} {
		if codeOf(err) != codeHandle {
			t.Errorf("%s: %v, want QIM_E_HANDLE", name, err)
		}
	}
}

// Server refusals keep the protocol's code first; the SDK's sentinels map to their codes.
func TestClassify(t *testing.T) {
	se := &sdk.ServerError{Op: contract.OpSend, Code: contract.ErrCodeNotMember, Message: "not in the group"}
	if err := classify(se); codeOf(err) != codeServer || !strings.HasPrefix(err.Error(), "NOT_MEMBER: ") {
		t.Errorf("server error: %v (code %d)", err, codeOf(err))
	}
	for err, want := range map[error]code{sdk.ErrClosed: codeClosed, sdk.ErrOffline: codeUnavailable,
		sdk.ErrInvalid: codeInvalid, errors.New("disk full"): codeInternal} {
		if got := codeOf(classify(err)); got != want {
			t.Errorf("%v: code %d, want %d", err, got, want)
		}
	}
}

// Many threads open, connect, poll, send and close clients at once, a poll blocked while its
// client closes included: every call answers with a code, the registry ends empty, and the
// clients' goroutines end with them. gates/capiit runs this under the race detector, which a
// C program on a -race libqim cannot use (ThreadSanitizer cannot map the shadow of a c-shared
// Go heap: "failed to allocate ... (errno: 12)").
func TestConcurrentHandles(t *testing.T) {
	before := runtime.NumGoroutine()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				churn(t, fmt.Sprintf(`{"data_dir":%q,"gateway":"127.0.0.1:1","user":"%d","device":"d","token":"t"}`,
					t.TempDir(), w*100+i+1))
			}
		}()
	}
	wg.Wait()
	handles.Lock()
	left := len(handles.m)
	handles.Unlock()
	if left != 0 {
		t.Fatalf("%d handles left open", left)
	}
	// The SDK's loops end asynchronously after Close returns their channels; wait for them.
	for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > before && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("%d goroutines after closing every client, %d before", n, before)
	}
}

// churn opens one client on an unreachable gateway, polls it from another goroutine, stores a
// send, lists conversations and closes it under the poll.
func churn(t *testing.T, cfg string) {
	h, err := openClient(cfg)
	if err != nil {
		t.Error(err)
		return
	}
	if err := connect(h); err != nil {
		t.Error(err)
	}
	polled := make(chan error, 1)
	go func() {
		for {
			if _, err := nextEvent(h, 5*time.Millisecond); codeOf(err) != codeTimeout && codeOf(err) != codeOK {
				polled <- err
				return
			}
		}
	}()
	if _, err := send(h, "7", []byte("queued")); err != nil {
		t.Error(err)
	}
	if _, err := conversations(h); err != nil {
		t.Error(err)
	}
	if err := closeClient(h); err != nil {
		t.Error(err)
	}
	if err := <-polled; codeOf(err) != codeClosed && codeOf(err) != codeHandle {
		t.Errorf("a poll across close ended with %v (code %d)", err, codeOf(err))
	}
}

// Group calls refuse a conversation that is not a group's and members that are not a JSON array
// of decimal user ids, before the server is asked.
func TestGroupRefusals(t *testing.T) {
	h, err := openClient(`{"data_dir":"` + t.TempDir() + `","gateway":"127.0.0.1:1","user":"5","device":"d","token":"t"}`)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = closeClient(h) }()
	direct := contract.DirectConversationID(contract.TenantID{}, 5, 6)
	if _, err := groupMembers(h, direct.String(), time.Millisecond); codeOf(err) != codeInvalid {
		t.Errorf("members of a direct conversation: %v, want QIM_E_INVALID", err)
	}
	for _, members := range []string{`[43]`, `["0"]`, `"43"`, `["x"]`} {
		if _, err := createGroup(h, "g", members); codeOf(err) != codeInvalid {
			t.Errorf("members %s: %v, want QIM_E_INVALID", members, err)
		}
	}
	if _, err := createGroup(h, "g", `["43","44"]`); err != nil {
		t.Errorf("a group created offline: %v", err)
	}
}

// A room id must be 32 hex digits of a non-zero u128; anything else is QIM_E_INVALID before the
// server is asked.
func TestRoomIDRefusals(t *testing.T) {
	h, err := openClient(`{"data_dir":"` + t.TempDir() + `","gateway":"127.0.0.1:1","user":"5","device":"d","token":"t"}`)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = closeClient(h) }()
	for _, room := range []string{"", "xyz", strings.Repeat("0", 32), strings.Repeat("1", 31)} {
		if _, err := sendRoom(h, room, []byte("x"), time.Millisecond); codeOf(err) != codeInvalid {
			t.Errorf("room %q: %v, want QIM_E_INVALID", room, err)
		}
	}
}

// A push registration names a known platform (an empty token needs none), and offline it is
// QIM_E_UNAVAILABLE: the app registers again once connected.
func TestRegisterPushTokenRefusals(t *testing.T) {
	h, err := openClient(`{"data_dir":"` + t.TempDir() + `","gateway":"127.0.0.1:1","user":"5","device":"d","token":"t"}`)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = closeClient(h) }()
	if _, err := registerPushToken(h, 9, "tok", "", time.Millisecond); codeOf(err) != codeInvalid {
		t.Errorf("platform 9: %v, want QIM_E_INVALID", err)
	}
	if _, err := registerPushToken(h, 1, "tok", "", time.Millisecond); codeOf(err) != codeUnavailable {
		t.Errorf("offline: %v, want QIM_E_UNAVAILABLE", err)
	}
}
