package rpcauth

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/obs"
)

// callers of the matrix test: every role, a certificate of the CA that is not whitelisted, and
// one whitelisted under two roles (as `qim all` would be).
var testIdentities = []Identity{
	{Name: "server", Services: []string{contract.RPCServiceWriter}},
	{Name: "gateway", Services: []string{contract.RPCServiceGatewayPush}, Roles: []contract.RPCRole{contract.RPCRoleGateway}},
	{Name: "mailbox", Services: []string{contract.RPCServiceMailbox}, Roles: []contract.RPCRole{contract.RPCRoleMailbox}},
	{Name: "admin", Roles: []contract.RPCRole{contract.RPCRoleAdmin}},
	{Name: "stranger"},
}

// allMethodsServer serves every internal service unimplemented: a call the matrix lets through
// reaches the handler and answers UNIMPLEMENTED, a refused one answers PERMISSION_DENIED first.
func allMethodsServer(opts []grpc.ServerOption) *grpc.Server {
	gs := grpc.NewServer(opts...)
	internalv1.RegisterWriterServer(gs, internalv1.UnimplementedWriterServer{})
	internalv1.RegisterGroupAdminServer(gs, internalv1.UnimplementedGroupAdminServer{})
	internalv1.RegisterMailboxServer(gs, internalv1.UnimplementedMailboxServer{})
	internalv1.RegisterPushServer(gs, internalv1.UnimplementedPushServer{})
	internalv1.RegisterSessionServer(gs, internalv1.UnimplementedSessionServer{})
	internalv1.RegisterRoomWriterServer(gs, internalv1.UnimplementedRoomWriterServer{})
	return gs
}

func serve(t *testing.T, tr *Transport, reg *obs.Registry) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := allMethodsServer(tr.ServerOptions(reg, nil))
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)
	return ln.Addr().String()
}

// call invokes method (unary or the SendStream bidi stream) with an empty message and returns
// the status code.
func call(t *testing.T, addr string, dial grpc.DialOption, method string) codes.Code {
	t.Helper()
	cc, err := grpc.NewClient(addr, dial)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if method == internalv1.Writer_SendStream_FullMethodName {
		st, err := cc.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method)
		if err == nil {
			err = st.RecvMsg(&emptypb.Empty{})
		}
		return status.Code(err)
	}
	return status.Code(cc.Invoke(ctx, method, &emptypb.Empty{}, &emptypb.Empty{}))
}

func writeTestSet(t *testing.T) (*DevSet, Config) {
	t.Helper()
	set, err := WriteDevSet(t.TempDir(), testIdentities)
	if err != nil {
		t.Fatal(err)
	}
	peers := append([]string{}, set.Peers...)
	// "both" is the gateway's certificate listed a second time, as a MailboxNode too.
	peers = append(peers, string(contract.RPCRoleMailbox)+":"+set.Certs["gateway"].Fingerprint.String())
	srv := set.Certs["server"]
	return set, Config{CAFile: set.CA, CertFile: srv.CertFile, KeyFile: srv.KeyFile, Peers: peers}
}

func clientOf(t *testing.T, set *DevSet, name string) *Transport {
	t.Helper()
	c := set.Certs[name]
	tr, err := LoadClient(set.CA, c.CertFile, c.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestEveryMatrixRowAdmitsOnlyItsRole calls every method of the matrix as every caller over real
// TLS 1.3: only the row's role gets through; everyone else, a whitelisted certificate of the
// wrong role included, gets PERMISSION_DENIED.
func TestEveryMatrixRowAdmitsOnlyItsRole(t *testing.T) {
	set, cfg := writeTestSet(t)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	tr, err := cfg.Load(contract.RPCServiceWriter)
	if err != nil {
		t.Fatal(err)
	}
	reg := obs.NewRegistry("test")
	addr := serve(t, tr, reg)
	held := map[string][]contract.RPCRole{
		"gateway": {contract.RPCRoleGateway, contract.RPCRoleMailbox}, "mailbox": {contract.RPCRoleMailbox},
		"admin": {contract.RPCRoleAdmin}, "stranger": nil,
	}
	denied := 0
	for method, want := range contract.RPCMethodRoles {
		for name, roles := range held {
			t.Run(fmt.Sprintf("%s as %s", method, name), func(t *testing.T) {
				allowed := false
				for _, r := range roles {
					allowed = allowed || r == want
				}
				got := call(t, addr, clientOf(t, set, name).DialOption(contract.RPCServiceWriter), method)
				switch {
				case allowed && got != codes.Unimplemented:
					t.Fatalf("role %s may call it: got %v, want the handler's Unimplemented", want, got)
				case !allowed && got != codes.PermissionDenied:
					t.Fatalf("holds %v, the method needs %s: got %v, want PermissionDenied", roles, want, got)
				}
				if !allowed {
					denied++
				}
			})
		}
	}
	if got := deniedTotal(t, reg); got != float64(denied) {
		t.Fatalf("qim_rpc_denied_total = %v, want %d (one per refused call)", got, denied)
	}
}

// TestPlaintextLoopbackRefusesAdmin: the development mode lets gateway and mailbox rows through
// (no identities to check) but never GroupAdmin.
func TestPlaintextLoopbackRefusesAdmin(t *testing.T) {
	tr, err := Config{PlaintextLoopback: true}.Load(contract.RPCServiceWriter)
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, tr, obs.NewRegistry("test"))
	for method, role := range contract.RPCMethodRoles {
		want := codes.Unimplemented
		if role == contract.RPCRoleAdmin {
			want = codes.PermissionDenied
		}
		if got := call(t, addr, tr.DialOption(contract.RPCServiceWriter), method); got != want {
			t.Errorf("%s in plaintext: got %v, want %v", method, got, want)
		}
	}
}

// TestUnlistedMethodIsRefused: a method without a matrix row is closed to every role.
func TestUnlistedMethodIsRefused(t *testing.T) {
	_, cfg := writeTestSet(t)
	tr, err := cfg.Load(contract.RPCServiceWriter)
	if err != nil {
		t.Fatal(err)
	}
	a := &authorizer{plaintext: tr.plaintext, denied: Denied(obs.NewRegistry("t"))}
	if err := a.check(context.Background(), "/qim.internal.v1.Writer/NotARow"); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("unlisted method: %v, want PermissionDenied", err)
	}
}

// TestMatrixCoversEveryInternalMethod: every method of the internal services has a row, so the
// matrix is the complete list of what can be called (a new RPC without a row is refused; this
// test names it).
func TestMatrixCoversEveryInternalMethod(t *testing.T) {
	seen := map[string]bool{}
	_ = internalv1.File_qiminternal_v1_room_proto // every file of the package is linked in
	var files []protoreflect.FileDescriptor
	protoregistry.GlobalFiles.RangeFilesByPackage("qim.internal.v1", func(fd protoreflect.FileDescriptor) bool {
		files = append(files, fd)
		return true
	})
	if len(files) < 4 {
		t.Fatalf("found %d files of qim.internal.v1: the check would be blind", len(files))
	}
	for _, fd := range files {
		for i := 0; i < fd.Services().Len(); i++ {
			sd := fd.Services().Get(i)
			for j := 0; j < sd.Methods().Len(); j++ {
				m := fmt.Sprintf("/%s/%s", sd.FullName(), sd.Methods().Get(j).Name())
				seen[m] = true
				if _, ok := contract.RPCMethodRoles[m]; !ok {
					t.Errorf("%s has no row in contract.RPCMethodRoles", m)
				}
			}
		}
	}
	for m := range contract.RPCMethodRoles {
		if !seen[m] {
			t.Errorf("contract.RPCMethodRoles lists %s, which no internal service has", m)
		}
	}
}

// TestDialChecksTheServerName: a caller of the MailboxNode refuses a server whose certificate
// is the writer's, and a client without a certificate never reaches a handler.
func TestDialChecksTheServerName(t *testing.T) {
	set, cfg := writeTestSet(t)
	tr, err := cfg.Load(contract.RPCServiceWriter)
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, tr, obs.NewRegistry("test"))
	gw := clientOf(t, set, "gateway")
	if got := call(t, addr, gw.DialOption(contract.RPCServiceMailbox), internalv1.Mailbox_PullMailbox_FullMethodName); got != codes.Unavailable {
		t.Fatalf("dialing the mailbox name at the writer's certificate: %v, want Unavailable (handshake refused)", got)
	}
	noCert := grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS13, RootCAs: gw.pool,
		ServerName: contract.RPCServerName(contract.RPCServiceWriter)}))
	if got := call(t, addr, noCert, internalv1.Writer_PullHistory_FullMethodName); got == codes.Unimplemented {
		t.Fatal("a client without a certificate reached the handler")
	}
}

func deniedTotal(t *testing.T, reg *obs.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() == "qim_rpc_denied_total" {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}
