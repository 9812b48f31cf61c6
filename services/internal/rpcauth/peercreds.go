package rpcauth

import (
	"fmt"
	"net"

	"google.golang.org/grpc/credentials"
)

// peerCreds is the server's TLS credential with the whitelist lookup done once per connection,
// at the handshake: the caller's leaf is hashed and its roles found before the first call, so a
// call only reads them (hashing the certificate in the interceptor cost a SHA-256 per unary call
// on the pull and push paths).
type peerCreds struct {
	credentials.TransportCredentials
	peers map[Fingerprint]roleSet
}

// peerInfo is the connection's AuthInfo: the TLS state plus the caller's whitelist entry.
type peerInfo struct {
	credentials.TLSInfo
	fp     Fingerprint
	roles  roleSet
	listed bool // the fingerprint is in QIM_RPC_PEERS
	cert   bool // the caller presented a certificate
}

func (c peerCreds) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	nc, ai, err := c.TransportCredentials.ServerHandshake(conn)
	if err != nil {
		return nil, nil, err
	}
	tlsInfo, ok := ai.(credentials.TLSInfo)
	if !ok {
		nc.Close()
		return nil, nil, fmt.Errorf("rpcauth: handshake returned %T, not TLS", ai)
	}
	info := peerInfo{TLSInfo: tlsInfo}
	if certs := tlsInfo.State.PeerCertificates; len(certs) > 0 {
		info.cert = true
		info.fp = FingerprintOf(certs[0].Raw)
		info.roles, info.listed = c.peers[info.fp]
	}
	return nc, info, nil
}

func (c peerCreds) Clone() credentials.TransportCredentials {
	return peerCreds{TransportCredentials: c.TransportCredentials.Clone(), peers: c.peers}
}
