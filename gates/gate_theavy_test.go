package gates

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/contract/devtoken"
	"github.com/qim-dev/qim/gates/e2e"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/wire"
)

// fakeGateway speaks just enough of the wire protocol (AUTH, SEND, PULL_SESSION_LIST) to drive
// gate 6 without a deployment: it keeps each user's conversations in memory. lose drops the
// conversation of the first peer that writes to anyone, to prove the gate notices a lost row.
type fakeGateway struct {
	secret []byte
	lose   bool
	mu     sync.Mutex
	act    uint64
	lists  map[contract.UserID]map[contract.UserID]uint64 // user → peer → activity
	lost   bool
}

func startFakeGateway(t *testing.T, lose bool) (*fakeGateway, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	f := &fakeGateway{secret: []byte("theavy-test-secret-0123456789"), lose: lose, lists: map[contract.UserID]map[contract.UserID]uint64{}}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go f.serve(c)
		}
	}()
	return f, ln.Addr().String()
}

func (f *fakeGateway) serve(c net.Conn) {
	defer c.Close()
	r, w := wire.NewReader(c), wire.NewWriter(c)
	defer w.Close()
	var user contract.UserID
	for {
		m, err := r.ReadMessage()
		if err != nil {
			return
		}
		var op contract.Opcode
		var out proto.Message
		switch m.Opcode {
		case contract.OpAuth:
			var req qimv1.AuthRequest
			_ = proto.Unmarshal(m.Payload, &req)
			cl, err := devtoken.Verify(f.secret, req.GetToken(), time.Now().UnixMilli())
			if err != nil {
				return
			}
			user, op, out = cl.User, contract.OpAuthOK, &qimv1.AuthOk{UserId: uint64(cl.User), SessionEpoch: 1}
		case contract.OpSend:
			var req qimv1.SendRequest
			_ = proto.Unmarshal(m.Payload, &req)
			f.record(contract.UserID(req.GetPeerUserId()), user)
			id := make([]byte, 16)
			id[0] = 1
			op, out = contract.OpSendAck, &qimv1.SendAck{ClientMessageId: req.GetClientMessageId(), MessageId: id, ConversationId: id, ConversationSeq: 1}
		case contract.OpPullSessionList:
			var req qimv1.PullSessionList
			_ = proto.Unmarshal(m.Payload, &req)
			op, out = contract.OpSessionListBatch, f.page(user, req.GetPageToken(), int(req.GetLimit()))
		default:
			return
		}
		payload, _ := proto.Marshal(out)
		if err := w.Send(context.Background(), wire.Message{Opcode: op, RequestID: m.RequestID, Payload: payload}); err != nil {
			return
		}
	}
}

func (f *fakeGateway) record(to, from contract.UserID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lose && !f.lost {
		f.lost = true
		return
	}
	if f.lists[to] == nil {
		f.lists[to] = map[contract.UserID]uint64{}
	}
	f.act++
	f.lists[to][from] = f.act
}

// page returns rows newest first; the token is the index of the next row.
func (f *fakeGateway) page(user contract.UserID, token []byte, limit int) *qimv1.SessionListBatch {
	f.mu.Lock()
	defer f.mu.Unlock()
	type row struct {
		peer contract.UserID
		act  uint64
	}
	var rows []row
	for p, a := range f.lists[user] {
		rows = append(rows, row{p, a})
	}
	slices.SortFunc(rows, func(a, b row) int { return int(b.act) - int(a.act) })
	if limit == 0 {
		limit = 20
	}
	from := 0
	if len(token) == 8 {
		from = int(binary.BigEndian.Uint64(token))
	}
	end := min(len(rows), from+limit)
	out := &qimv1.SessionListBatch{HasMore: end < len(rows)}
	for _, r := range rows[from:end] {
		out.Sessions = append(out.Sessions, &qimv1.SessionEntry{Peer: &qimv1.SessionEntry_PeerUserId{PeerUserId: uint64(r.peer)}})
	}
	if out.HasMore {
		out.NextPageToken = binary.BigEndian.AppendUint64(nil, uint64(end))
	}
	return out
}

func theavyEnv(t *testing.T, g *theavyGate, f *fakeGateway, addr string) *Env {
	t.Helper()
	g.target = func(context.Context, *Env) (*e2e.Env, error) { return e2e.NewEnv(addr, f.secret, nil, 64, nil), nil }
	return &Env{Progress: &bytes.Buffer{}}
}

func FailedChecks(r *Result) []string {
	var out []string
	for _, c := range r.Checks {
		if !c.Passed && !c.Skipped {
			out = append(out, c.Name+": "+c.Detail)
		}
	}
	return out
}

func TestTHeavyGate(t *testing.T) {
	tests := []struct {
		name    string
		lose    bool
		slo     time.Duration
		pass    bool
		failing string
	}{
		{"healthy server passes", false, 0, true, ""},
		{"a lost conversation fails", true, 0, false, "conversations"},
		{"a first screen over the SLO fails", false, time.Nanosecond, false, "first screen P99"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, addr := startFakeGateway(t, tc.lose)
			g := theavyGate{conversations: 45, samples: theavyMinSample, workers: 6, buildWait: time.Second, slo: tc.slo}
			env := theavyEnv(t, &g, f, addr)
			r := RunOne(context.Background(), g, env, time.Hour)
			if r.Passed != tc.pass {
				t.Fatalf("passed = %v, want %v; error %q, failed checks %v", r.Passed, tc.pass, r.Error, FailedChecks(r))
			}
			if tc.pass {
				if r.Metrics["conversations"] != 45 || r.Metrics["samples"] != theavyMinSample || r.Metrics["first_screen_p99_ms"] <= 0 {
					t.Fatalf("metrics = %v", r.Metrics)
				}
				return
			}
			if failed := FailedChecks(r); len(failed) != 1 || !strings.HasPrefix(failed[0], tc.failing) {
				t.Fatalf("failed checks = %v, want only %q", failed, tc.failing)
			}
		})
	}
}

// A gate that cannot reach its deployment fails closed.
func TestTHeavyGateFailsWithoutDeployment(t *testing.T) {
	g := theavyGate{target: func(context.Context, *Env) (*e2e.Env, error) { return nil, errors.New("no stack") }}
	r := RunOne(context.Background(), g, &Env{Progress: &bytes.Buffer{}}, time.Hour)
	if r.Passed || !strings.Contains(r.Error, "no stack") {
		t.Fatalf("result = %+v, want a failure naming the cause", r)
	}
}
