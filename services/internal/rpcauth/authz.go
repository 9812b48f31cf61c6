package rpcauth

import (
	"context"
	"log/slog"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/obs"
)

// Reasons of qim_rpc_denied_total: a fixed set, so the label stays bounded.
const (
	reasonUnlisted    = "method_not_in_matrix"
	reasonNoCert      = "no_client_certificate"
	reasonUnknownCert = "certificate_not_whitelisted"
	reasonWrongRole   = "wrong_role"
	reasonNeedsMTLS   = "admin_needs_mtls"
)

// authorizer is the per-call check of the method matrix.
//
// Invariants: every call of every method passes through check before its handler runs (the
// interceptors are the server's only entry); a method is allowed only when contract.RPCMethodRoles
// lists it and the caller's leaf fingerprint is whitelisted under that role. It holds no per-call
// state; the log set only limits warnings to one per (reason, method, fingerprint).
//
// Checking once per connection in tls.Config.VerifyPeerCertificate was rejected: it knows the
// certificate but not the method, and the matrix is per method (a MailboxNode's certificate is
// valid for PushBatch on a gateway and for nothing on a writer).
type authorizer struct {
	plaintext bool
	peers     map[Fingerprint]roleSet
	denied    *prometheus.CounterVec
	log       *slog.Logger
	logged    sync.Map // string → struct{}; bounded by logCap
	nlogged   int
	mu        sync.Mutex
}

const logCap = 256

// ServerOptions are the credentials and interceptors of a service's gRPC server. Denials are
// counted in qim_rpc_denied_total{method, reason}, method being a matrix row or "unlisted".
func (t *Transport) ServerOptions(reg *obs.Registry, log *slog.Logger) []grpc.ServerOption {
	a := &authorizer{plaintext: t.plaintext, peers: t.peers, log: log, denied: Denied(reg)}
	if t.leaf != nil {
		reg.GaugeFunc("qim_rpc_cert_expiry_timestamp_seconds", "When this process's internal RPC certificate expires (Unix seconds).",
			func() float64 { return float64(t.leaf.NotAfter.Unix()) })
	}
	opts := []grpc.ServerOption{grpc.ChainUnaryInterceptor(a.unary), grpc.ChainStreamInterceptor(a.stream)}
	if !t.plaintext {
		opts = append(opts, grpc.Creds(credentials.NewTLS(t.serverTLS())))
	}
	return opts
}

// Denied is qim_rpc_denied_total{method, reason} of reg (registered on first use).
func Denied(reg *obs.Registry) *prometheus.CounterVec {
	return reg.CounterVec("qim_rpc_denied_total",
		"Internal RPC calls refused by the role matrix (PERMISSION_DENIED), by method and reason.", "method", "reason")
}

func (a *authorizer) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if err := a.check(ctx, info.FullMethod); err != nil {
		return nil, err
	}
	return h(ctx, req)
}

func (a *authorizer) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if err := a.check(ss.Context(), info.FullMethod); err != nil {
		return err
	}
	return h(srv, ss)
}

// check answers nil or a PERMISSION_DENIED status naming the role the method needs.
func (a *authorizer) check(ctx context.Context, method string) error {
	want, listed := contract.RPCMethodRoles[method]
	if !listed {
		return a.deny("unlisted", method, reasonUnlisted, Fingerprint{}, "")
	}
	if a.plaintext {
		if want == contract.RPCRoleAdmin {
			return a.deny(method, method, reasonNeedsMTLS, Fingerprint{}, "")
		}
		return nil
	}
	leaf, ok := peerLeaf(ctx)
	if !ok {
		return a.deny(method, method, reasonNoCert, Fingerprint{}, "")
	}
	fp := FingerprintOf(leaf)
	roles, listedPeer := a.peers[fp]
	switch {
	case !listedPeer:
		return a.deny(method, method, reasonUnknownCert, fp, "")
	case !roles.has(want):
		return a.deny(method, method, reasonWrongRole, fp, roles)
	}
	return nil
}

func peerLeaf(ctx context.Context) ([]byte, bool) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return nil, false
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(info.State.PeerCertificates) == 0 {
		return nil, false
	}
	return info.State.PeerCertificates[0].Raw, true
}

func (a *authorizer) deny(label, method, reason string, fp Fingerprint, held any) error {
	a.denied.WithLabelValues(label, reason).Inc()
	want := contract.RPCMethodRoles[method]
	a.warnOnce(method, reason, fp, held)
	if want == "" {
		return status.Errorf(codes.PermissionDenied, "rpcauth: %s is not in the internal RPC role matrix", method)
	}
	return status.Errorf(codes.PermissionDenied, "rpcauth: %s needs role %s (%s)", method, want, reason)
}

// warnOnce logs a denial the first time it is seen, so a misconfigured peer calling at load does
// not flood the log (the counter keeps the rate).
func (a *authorizer) warnOnce(method, reason string, fp Fingerprint, held any) {
	if a.log == nil {
		return
	}
	key := reason + "|" + method + "|" + fp.String()
	if _, seen := a.logged.Load(key); seen {
		return
	}
	a.mu.Lock()
	full := a.nlogged >= logCap
	if !full {
		a.nlogged++
	}
	a.mu.Unlock()
	if full {
		return
	}
	a.logged.Store(key, struct{}{})
	attrs := []any{"method", method, "reason", reason}
	if fp != (Fingerprint{}) {
		attrs = append(attrs, "peer_fingerprint", fp.String())
	}
	if rs, ok := held.(roleSet); ok {
		attrs = append(attrs, "peer_roles", rs.names())
	}
	a.log.Warn("rpcauth: internal RPC refused", attrs...)
}
