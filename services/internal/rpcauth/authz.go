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
// lists it and the caller's leaf fingerprint is whitelisted under that role (looked up once per
// connection by peerCreds). It holds no per-call state; the log set only limits warnings to one
// per (reason, method, fingerprint).
//
// Checking once per connection in tls.Config.VerifyPeerCertificate was rejected: it knows the
// certificate but not the method, and the matrix is per method (a MailboxNode's certificate is
// valid for PushBatch on a gateway and for nothing on a writer).
type authorizer struct {
	plaintext bool
	denied    *prometheus.CounterVec
	log       *slog.Logger
	mu        sync.Mutex
	logged    map[string]struct{} // at most logCap keys; guarded by mu
}

const logCap = 256

// ServerOptions are the credentials and interceptors of a service's gRPC server. Denials are
// counted in qim_rpc_denied_total{method, reason}, method being a matrix row or "unlisted".
func (t *Transport) ServerOptions(reg *obs.Registry, log *slog.Logger) []grpc.ServerOption {
	a := &authorizer{plaintext: t.plaintext, log: log, denied: Denied(reg)}
	if t.leaf != nil {
		reg.GaugeFunc("qim_rpc_cert_expiry_timestamp_seconds", "When this process's internal RPC certificate expires (Unix seconds).",
			func() float64 { return float64(t.leaf.NotAfter.Unix()) })
	}
	opts := []grpc.ServerOption{grpc.ChainUnaryInterceptor(a.unary), grpc.ChainStreamInterceptor(a.stream)}
	if !t.plaintext {
		opts = append(opts, grpc.Creds(peerCreds{TransportCredentials: credentials.NewTLS(t.serverTLS()), peers: t.peers}))
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
	var info peerInfo
	if p, ok := peer.FromContext(ctx); ok {
		info, _ = p.AuthInfo.(peerInfo)
	}
	switch {
	case !info.cert:
		return a.deny(method, method, reasonNoCert, Fingerprint{}, "")
	case !info.listed:
		return a.deny(method, method, reasonUnknownCert, info.fp, "")
	case !info.roles.has(want):
		return a.deny(method, method, reasonWrongRole, info.fp, info.roles)
	}
	return nil
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
	a.mu.Lock()
	_, seen := a.logged[key]
	first := !seen && len(a.logged) < logCap
	if first {
		if a.logged == nil {
			a.logged = map[string]struct{}{}
		}
		a.logged[key] = struct{}{}
	}
	a.mu.Unlock()
	if !first {
		return
	}
	attrs := []any{"method", method, "reason", reason}
	if fp != (Fingerprint{}) {
		attrs = append(attrs, "peer_fingerprint", fp.String())
	}
	if rs, ok := held.(roleSet); ok {
		attrs = append(attrs, "peer_roles", rs.names())
	}
	a.log.Warn("rpcauth: internal RPC refused", attrs...)
}
