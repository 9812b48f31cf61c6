// Package rpcauth is the internal RPC boundary's security: TLS 1.3 mutual authentication between
// the services, the role whitelist (a caller's role is looked up from the SHA-256 fingerprint of
// its leaf certificate) and the per-method role matrix of contract.RPCMethodRoles, enforced by a
// server interceptor on every call (ADR-0025).
//
// It owns three decisions and must never weaken them:
//   - a process refuses to start when its internal addresses are not all loopback and mTLS is not
//     complete (CA, certificate, key and the peer whitelist); plaintext exists only as an explicit
//     loopback development mode, QIM_RPC_PLAINTEXT_LOOPBACK;
//   - a method without a row in the matrix is refused to every caller (closed by default), and a
//     certificate that chains to the CA but is not whitelisted holds no role;
//   - GroupAdmin needs an admin certificate even on loopback: plaintext callers have no identity,
//     so the development mode refuses it too.
//
// It also writes development certificate sets (`qimctl certs dev`, the harness's deployments).
package rpcauth
