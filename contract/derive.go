package contract

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"strings"

	"lukechampine.com/blake3"
)

// DispatchID identifies the one GroupDispatch of a message to one mailbox shard.
type DispatchID U128

// NewDispatchID = blake3("qim.group-dispatch.v1\0" ‖ message_id_be16 ‖ shard_be4)[0..16].
// Deterministic so that a replayed fanout batch produces the same ids and the MailboxNode can
// converge duplicates by dispatch_id + payload_digest instead of allocating a second sequence.
func NewDispatchID(msg MessageID, shard uint32) DispatchID {
	var buf [len(DomainGroupDispatch) + 16 + 4]byte
	n := copy(buf[:], DomainGroupDispatch)
	binary.BigEndian.PutUint64(buf[n:], msg.Hi)
	binary.BigEndian.PutUint64(buf[n+8:], msg.Lo)
	binary.BigEndian.PutUint32(buf[n+16:], shard)
	sum := blake3.Sum256(buf[:])
	u, _ := U128FromBytes(sum[:16])
	return DispatchID(u)
}

// Bytes is the 16-byte big-endian form.
func (d DispatchID) Bytes() [16]byte { return U128(d).Bytes() }

func (d DispatchID) String() string { return U128(d).String() }

// SecurityMode is how a client reaches an endpoint; part of the endpoint's identity because the
// same address over TLS and over plain TCP may be different servers.
type SecurityMode string

const (
	ModeTCP SecurityMode = "tcp"
	ModeTLS SecurityMode = "tls"
	ModeWS  SecurityMode = "ws"
	ModeWSS SecurityMode = "wss"
)

// Endpoint is what a client connects to; its canonical form names the local store directory.
type Endpoint struct {
	Address       string       // host:port
	Mode          SecurityMode // tcp, tls, ws, wss
	ServerName    string       // TLS SNI; empty means the host of Address
	CAFingerprint string       // hex digest of the pinned CA, empty for the system roots
}

// Canonical returns "v1|mode|host:port|sni|ca" with host, SNI and fingerprint lowercased, so
// spelling variants of one endpoint share a store and different endpoints never do.
func (e Endpoint) Canonical() (string, error) {
	host, port, err := net.SplitHostPort(e.Address)
	if err != nil || port == "" || host == "" {
		return "", fmt.Errorf("contract: endpoint address %q must be host:port", e.Address)
	}
	switch e.Mode {
	case ModeTCP, ModeTLS, ModeWS, ModeWSS:
	default:
		return "", fmt.Errorf("contract: endpoint mode %q is not tcp, tls, ws or wss", e.Mode)
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	sni := strings.ToLower(e.ServerName)
	if sni == "" && (e.Mode == ModeTLS || e.Mode == ModeWSS) {
		sni = host
	}
	return strings.Join([]string{"v1", string(e.Mode), net.JoinHostPort(host, port), sni,
		strings.ToLower(e.CAFingerprint)}, "|"), nil
}

// EndpointScope = lowercase hex of blake3("qim.endpoint-scope.v1\0" ‖ canonical_endpoint)[0..16].
// It is the endpoint's path segment in client store paths: short, stable across platforms, and it
// does not put the address (or anything secret) into a directory name.
func EndpointScope(canonical string) string {
	h := blake3.New(32, nil)
	_, _ = h.Write([]byte(DomainEndpointScope))
	_, _ = h.Write([]byte(canonical))
	sum := h.Sum(nil)
	return hex.EncodeToString(sum[:16])
}

// DeriveClientMessageID maps a device's install id and a strictly increasing per-device ordinal to
// a 16-byte client_message_id. Ordinals are reserved durably by the SDK before use, so ids never
// repeat after a crash or a clock change; the hash keeps ids of different installs disjoint.
func DeriveClientMessageID(install U128, ordinal uint64) ClientMessageID {
	var buf [len(DomainClientMessageID) + 24]byte
	n := copy(buf[:], DomainClientMessageID)
	binary.BigEndian.PutUint64(buf[n:], install.Hi)
	binary.BigEndian.PutUint64(buf[n+8:], install.Lo)
	binary.BigEndian.PutUint64(buf[n+16:], ordinal)
	sum := blake3.Sum256(buf[:])
	u, _ := U128FromBytes(sum[:16])
	if u.IsZero() { // 2^-128; keep the non-zero rule unconditional anyway
		u.Lo = 1
	}
	return ClientMessageID(u)
}
