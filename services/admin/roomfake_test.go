package admin

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/obs"
	"github.com/qim-dev/qim/services/internal/rpcauth"
)

// fakeRoomWriter stands in for a RoomWriter: a real gRPC server with the RoomWriter's mTLS
// certificate and the role matrix, so the admin certificate, the server name checked for
// contract.RPCServiceRoom and Moderate's admin role are what production uses. It records each
// Moderate and answers out. (The RoomWriter's own handling is services/room's tests.)
type fakeRoomWriter struct {
	internalv1.UnimplementedRoomWriterServer
	mu  sync.Mutex
	got []*internalv1.RoomModeration
	out *internalv1.RoomModerationOutcome
}

func (f *fakeRoomWriter) Moderate(_ context.Context, in *internalv1.RoomModeration) (*internalv1.RoomModerationOutcome, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, proto.Clone(in).(*internalv1.RoomModeration))
	return f.out, nil
}

func (f *fakeRoomWriter) calls() []*internalv1.RoomModeration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*internalv1.RoomModeration(nil), f.got...)
}

func (f *fakeRoomWriter) answer(out *internalv1.RoomModerationOutcome) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.out = out
}

// roomStack is n fake RoomWriters on loopback and the development certificates they and the
// admin API hold. Fake i answers room_seq seqOf(i), so an answer names the fake that gave it.
type roomStack struct {
	addrs []string
	fakes []*fakeRoomWriter
	certs *rpcauth.DevSet
}

func seqOf(i int) uint64 { return uint64(i+1) << 40 }

func startRoomWriters(t *testing.T, n int) *roomStack {
	t.Helper()
	certs, err := rpcauth.WriteDevSet(t.TempDir(), rpcauth.DevIdentities(1))
	if err != nil {
		t.Fatal(err)
	}
	room := certs.Certs["room"]
	tr, err := rpcauth.Config{CAFile: certs.CA, CertFile: room.CertFile, KeyFile: room.KeyFile, Peers: certs.Peers}.Load(contract.RPCServiceRoom)
	if err != nil {
		t.Fatal(err)
	}
	st := &roomStack{certs: certs}
	for i := range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := grpc.NewServer(tr.ServerOptions(obs.NewRegistry("room"), slog.New(slog.DiscardHandler))...)
		f := &fakeRoomWriter{out: &internalv1.RoomModerationOutcome{Info: &internalv1.RoomInfo{RoomSeq: seqOf(i)}}}
		internalv1.RegisterRoomWriterServer(srv, f)
		go func() { _ = srv.Serve(ln) }()
		t.Cleanup(srv.Stop)
		st.addrs = append(st.addrs, ln.Addr().String())
		st.fakes = append(st.fakes, f)
	}
	return st
}

// fixture is the admin API with QIM_ROOM_ADDRS = addrs and the admin certificate.
func (st *roomStack) fixture(t *testing.T, addrs []string) *fixture {
	t.Helper()
	admin := st.certs.Certs["admin"]
	return newFixtureWith(t, func(c *Config) {
		c.RoomAddrs, c.RPCCAFile, c.RPCCertFile, c.RPCKeyFile = addrs, st.certs.CA, admin.CertFile, admin.KeyFile
	})
}

// counts is how many calls each fake has received.
func (st *roomStack) counts() []int {
	out := make([]int, len(st.fakes))
	for i, f := range st.fakes {
		out[i] = len(f.calls())
	}
	return out
}

// roomOwnedBy is a room id, spelled without kind bits as an operator may, whose owner in addrs
// is instance i.
func roomOwnedBy(t *testing.T, tenant contract.TenantID, addrs []string, i int) contract.U128 {
	t.Helper()
	for n := range uint64(1000) {
		id := contract.U128{Lo: n + 1}
		conv, _ := contract.RoomConversationID(id)
		if contract.RoomOwner(tenant, conv, addrs) == i {
			return id
		}
	}
	t.Fatalf("no room of 1000 is owned by instance %d", i)
	return contract.U128{}
}
