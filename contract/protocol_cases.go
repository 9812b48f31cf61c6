package contract

// ConnPhase is when, in a connection's life, a ProtocolCase can occur.
type ConnPhase uint8

const (
	BeforeAuth ConnPhase = 1                      // from accept until AUTH_OK is written
	AfterAuth  ConnPhase = 2                      // once AUTH_OK was written
	AnyPhase   ConnPhase = BeforeAuth | AfterAuth // either
)

func (p ConnPhase) String() string {
	switch p {
	case BeforeAuth:
		return "before AUTH_OK"
	case AfterAuth:
		return "after AUTH_OK"
	case AnyPhase:
		return "any"
	}
	return "unknown"
}

// ProtocolCase is one condition whose outcome concerns the connection, not just one request:
// the frame the server sends first (ERROR, KICKED or none) and whether it then closes.
//
// The table exists because a client author cannot infer these from the error codes. Whether an
// ERROR is the last frame depends on the condition, not on the code: a 5 MiB frame and a 65 KiB
// PULL_MAILBOX both get PAYLOAD_TOO_LARGE, but only the first closes the connection (the reader
// cannot trust the stream past a frame it refused to read). Other framing errors close without
// any frame: the stream is beyond repair either way, and only an oversize message is something
// the client can act on (services/gateway/conn.go, readFailed). A "closes" attribute per error
// code was therefore rejected: it cannot express either fact.
//
// docs/protocol.md is generated from this table, and the gateway's protocol test runs every row
// against a real gateway and fails for a row it has no scenario for, so the doc, the table and
// the server cannot drift apart. An ERROR not listed here leaves the connection open.
type ProtocolCase struct {
	Name   string    // stable snake_case id; the gateway test keys its scenarios by it
	Phase  ConnPhase // when it can happen
	When   string    // the condition, as the docs state it
	Reply  Opcode    // the frame sent first: OpError, OpKicked, or 0 for none
	Error  ErrorCode // the ERROR's code when Reply is OpError
	Kick   KickReason
	Closes bool   // the server closes the connection (after Reply, if any)
	Client string // what a client should do about it
}

// Shared wording of the client advice, so the rows read alike.
const (
	adviceFixFraming = "fix the encoder; reconnect"
	adviceReconnect  = "reconnect with backoff"
)

var protocolCases = []ProtocolCase{
	{"bad_magic", AnyPhase, "header bytes 0-1 are not 0x51 0x4D (what TLS or HTTP bytes on the plain TCP port look like)",
		0, 0, 0, true, adviceFixFraming},
	{"bad_version", AnyPhase, "header byte 2 (version) is not 1", 0, 0, 0, true, adviceFixFraming},
	{"bad_header_crc", AnyPhase, "header bytes 16-19 are not the CRC32C of bytes 0-15", 0, 0, 0, true, adviceFixFraming},
	{"reserved_flags", AnyPhase, "a flag bit other than COMPRESSED (0x01) and MORE (0x02) is set, NEED_ACK (0x04) included",
		0, 0, 0, true, adviceFixFraming},
	{"frame_too_large", AnyPhase, "a header declares a length above 4 MiB; refused before its payload is read",
		OpError, ErrCodePayloadTooLarge, 0, true, "keep every message within 4 MiB; reconnect"},
	{"message_too_large", AnyPhase, "the chunks of one message add up to more than 4 MiB",
		OpError, ErrCodePayloadTooLarge, 0, true, "keep every message within 4 MiB; reconnect"},
	{"decompressed_too_large", AnyPhase, "a COMPRESSED message decompresses to more than 4 MiB",
		OpError, ErrCodePayloadTooLarge, 0, true, "keep every message within 4 MiB; reconnect"},
	{"bad_compression", AnyPhase, "a COMPRESSED message is not valid zstd (or declares a window above 4 MiB)",
		0, 0, 0, true, adviceFixFraming},
	{"chunk_mismatch", AnyPhase, "a chunk continues a stream whose first chunk had another opcode, request id or COMPRESSED bit",
		0, 0, 0, true, adviceFixFraming},
	{"too_many_streams", AnyPhase, "a third chunked message starts while two are still incomplete",
		0, 0, 0, true, "finish one chunked message before starting the next; reconnect"},
	{"server_drain", AnyPhase, "the gateway shuts down",
		OpKicked, 0, KickServerDrain, true, "reconnect after retry_after_ms (another gateway may take it)"},

	{"gateway_full", BeforeAuth, "the gateway already holds its maximum of connections (QIM_GATEWAY_MAX_CONNS) at accept",
		0, 0, 0, true, adviceReconnect},
	{"auth_timeout", BeforeAuth, "no complete first frame, TLS handshake included, within the AUTH timeout (QIM_GATEWAY_AUTH_TIMEOUT, default 10 s)",
		0, 0, 0, true, "send AUTH as soon as the connection is up"},
	{"not_auth_first", BeforeAuth, "the first frame is not AUTH",
		OpError, ErrCodeUnauthorized, 0, true, "send AUTH first; reconnect"},
	{"auth_malformed", BeforeAuth, "the AUTH payload is not a valid AuthRequest",
		OpError, ErrCodeUnauthorized, 0, true, adviceFixFraming},
	{"auth_refused", BeforeAuth, "the token (a JWT of a configured issuer, or a dev token) is malformed, forged, expired, not yet valid, revoked, or of an issuer, key or claims not accepted; or tenant_id or device_id contradicts it; or it names no device and device_id is empty",
		OpError, ErrCodeUnauthorized, 0, true, "get a new token; the same AUTH cannot succeed"},
	{"auth_rate_limited", BeforeAuth, "the source address has spent its failed AUTHs (QIM_GATEWAY_AUTH_FAILURE_BURST, one forgiven every QIM_GATEWAY_AUTH_FAILURE_REFILL); refused before the token is looked at",
		OpError, ErrCodeRateLimited, 0, true, "retry later; each failure from the address is forgiven after the refill interval (1 s by default)"},
	{"auth_unavailable", BeforeAuth, "the mailbox (for has_offline_data) or the session_epoch store does not answer",
		OpError, ErrCodeUnavailable, 0, true, "reconnect soon: after retry_after_ms if set, else a short backoff capped at a few seconds (§7.1)"},
	{"auth_superseded", BeforeAuth, "a login of the same (tenant, user, device) with a newer session_epoch is already live",
		OpKicked, 0, KickReplaced, true, "do not reconnect automatically"},

	{"heartbeat_timeout", AfterAuth, "nothing received for heartbeat_timeout_ms (told in AUTH_OK and PONG; default 150 s)",
		0, 0, 0, true, "PING every heartbeat_interval_ms; reconnect"},
	{"write_stalled", AfterAuth, "the client stops reading and one socket write blocks for the write timeout (QIM_GATEWAY_WRITE_TIMEOUT, default 10 s)",
		0, 0, 0, true, "keep reading; reconnect"},
	{"logout", AfterAuth, "the client sends LOGOUT", 0, 0, 0, true, "none: the close is the acknowledgement"},
	{"replaced", AfterAuth, "another login of the same (tenant, user, device) succeeds",
		OpKicked, 0, KickReplaced, true, "do not reconnect automatically: two clients would evict each other"},
	{"revoked", AfterAuth, "a revocation covers the session's credential (its user or device, issued before the revocation's time)",
		OpKicked, 0, KickLoggedOut, true, "do not reconnect without a new sign-in: the same token is refused (credential revoked)"},
	{"credential_expired", AfterAuth, "the token the session authenticated with reaches its expiry (exp of a JWT, expires_at_ms of a dev token)",
		OpKicked, 0, KickCredentialExpired, true, "reconnect with a fresh token; the Go SDK asks its TokenSource again"},
	{"kicked_by_admin", AfterAuth, "an operator kicks the session's user or device through the admin API (POST /v1/kicks); the credential stays valid",
		OpKicked, 0, KickByAdmin, true, "do not reconnect automatically; a new sign-in (even with the same token) is accepted"},
	{"second_auth", AfterAuth, "AUTH on an authenticated connection",
		OpError, ErrCodeInvalidArgument, 0, false, "none needed; the session is unchanged"},
	{"request_too_large", AfterAuth, "a request other than SEND is above 64 KiB (after reassembly and decompression)",
		OpError, ErrCodePayloadTooLarge, 0, false, "do not retry unchanged"},
	{"not_served", AfterAuth, "an opcode this server does not serve: unknown, marked not served, or downlink (PONG excepted)",
		OpError, ErrCodeUnimplemented, 0, false, "do not retry"},
	{"malformed_request", AfterAuth, "a SEND or PING payload is not valid protobuf, or a SEND lacks a 16-byte non-zero client_message_id",
		OpError, ErrCodeInvalidArgument, 0, false, "do not retry unchanged"},
}

// ProtocolCases returns a copy of the table of connection-level outcomes.
func ProtocolCases() []ProtocolCase { return append([]ProtocolCase(nil), protocolCases...) }
