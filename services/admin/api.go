package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/contract/devtoken"
	"github.com/qim-dev/qim/services/authn/revocation"
)

// requestMaxBytes bounds a request body; every request of this API is a few hundred bytes.
const requestMaxBytes = 64 << 10

// route is one endpoint. The OpenAPI document is generated from these (openapi.go).
type route struct {
	method, path, scope, summary string
	// req and resp are zero values of the JSON bodies (nil: none), for the document.
	req, resp any
	handle    handleFunc
}

// input is what a handler reads: a POST's or DELETE's JSON body, a GET's query.
type input struct {
	body  []byte
	query url.Values
}

// handleFunc runs one route: the status and the JSON answer, the audit log's fields, or an error
// (errBadRequest: 400, errNotFound: 404, else 503).
type handleFunc func(ctx context.Context, a *api, in input) (status int, resp any, audit []any, err error)

// routes are the API, in the document's order.
func routes() []route {
	return []route{
		{http.MethodPost, "/v1/revocations", ScopeRevocations,
			"Refuse a user's or a device's credentials issued before a time, and end their live sessions",
			RevocationRequest{}, RevocationResponse{}, revocationRoute(revocation.Revoke, http.StatusOK)},
		{http.MethodDelete, "/v1/revocations", ScopeRevocations,
			"Lift a revocation (live sessions are not affected)", RevocationRequest{}, nil,
			revocationRoute(revocation.Lift, http.StatusNoContent)},
		{http.MethodPost, "/v1/kicks", ScopeSessions,
			"End a user's or a device's live sessions now (KICKED_BY_ADMIN); their credentials stay valid",
			KickRequest{}, KickResponse{}, kick},
		{http.MethodGet, "/v1/devices", ScopeSessions,
			"List where a user is online: each device holding a session, and its gateway (from qim.presence; 404 without QIM_KAFKA_BROKERS)",
			DevicesQuery{}, Devices{}, devices},
		{http.MethodPost, "/v1/groups", ScopeGroups,
			"Create a group (a CONTROL commit with actor 0; 404 without QIM_WRITER_ADDRS)", GroupCreateRequest{}, GroupChange{}, groupCreate},
		{http.MethodPost, "/v1/groups/members", ScopeGroups,
			"Add members to a group (one CONTROL message for all of them)", GroupMembersRequest{}, GroupChange{}, groupMembers(contract.AdminGroupAdd)},
		{http.MethodDelete, "/v1/groups/members", ScopeGroups,
			"Remove members from a group (one CONTROL message for all of them)", GroupMembersRequest{}, GroupChange{}, groupMembers(contract.AdminGroupRemove)},
		{http.MethodGet, "/v1/groups/members", ScopeGroups,
			"List a group's current members", GroupQuery{}, GroupMembers{}, groupList},
		{http.MethodPost, "/v1/messages", ScopeMessages,
			"Send a SYSTEM message (a type no client may send) from the product's system account to a user or a group (404 without QIM_WRITER_ADDRS)",
			MessageRequest{}, MessageResponse{}, message},
		{http.MethodPost, "/v1/rooms/moderation", ScopeRooms,
			"Ban, unban, kick, mute or unmute a user in a room, or set its slow mode or rate limit, on the room's owning RoomWriter; " +
				"answers the room's counts after the change (404 without QIM_ROOM_ADDRS). Stored before the answer: survives a restart of the RoomWriter",
			RoomModerationRequest{}, RoomInfo{}, roomModerate},
		{http.MethodGet, "/v1/rooms", ScopeRooms,
			"A room's counts on its owning RoomWriter: members, online connections, buffered events and its moderation settings (404 without QIM_ROOM_ADDRS)",
			RoomQuery{}, RoomInfo{}, roomInfo},
		{http.MethodPost, "/v1/dev-tokens", ScopeDevTokens,
			"Mint a dev token (tests and demos; the route answers 404 without QIM_TOKEN_SECRET)",
			DevTokenRequest{}, DevTokenResponse{}, devToken},
	}
}

// RevocationRequest names whose credentials are refused.
type RevocationRequest struct {
	Tenant string `json:"tenant,omitempty" doc:"tenant as 32 hex digits (default: tenant 0)"`
	User   uint64 `json:"user" doc:"user id (from 1)"`
	Device string `json:"device,omitempty" doc:"device id; empty or \"*\": every device of the user"`
	// NotBefore defaults to now.
	NotBefore string `json:"not_before,omitempty" doc:"RFC 3339: credentials issued before it are refused (default: now)"`
}

// RevocationResponse echoes what was stored.
type RevocationResponse struct {
	NotBefore string `json:"not_before" doc:"RFC 3339 time stored"`
}

// DevTokenRequest asks for a dev token.
type DevTokenRequest struct {
	Tenant     string `json:"tenant,omitempty" doc:"tenant as 32 hex digits (default: tenant 0)"`
	User       uint64 `json:"user" doc:"user id (from 1)"`
	Device     string `json:"device" doc:"device id, 1..64 bytes"`
	TTLSeconds int64  `json:"ttl_seconds,omitempty" doc:"lifetime in seconds (default 3600, at most 604800)"`
}

// DevTokenResponse carries the token.
type DevTokenResponse struct {
	Token     string `json:"token" doc:"the dev token (a bearer secret: never log it)"`
	ExpiresAt string `json:"expires_at" doc:"RFC 3339 expiry"`
}

// errBadRequest is wrapped by every 400, errNotFound by every 404 (a route whose backend is not
// configured, or a group that does not exist).
var (
	errBadRequest = errors.New("bad request")
	errNotFound   = errors.New("not found")
)

func (r RevocationRequest) revocation() (revocation.Revocation, error) {
	rv := revocation.Revocation{User: contract.UserID(r.User), Device: r.Device, NotBefore: time.Now()}
	if rv.Device == "" {
		rv.Device = revocation.AllDevices
	}
	var err error
	if rv.Tenant, err = parseTenant(r.Tenant); err != nil {
		return rv, err
	}
	if r.NotBefore != "" {
		if rv.NotBefore, err = time.Parse(time.RFC3339Nano, r.NotBefore); err != nil {
			return rv, fmt.Errorf("%w: not_before: %v", errBadRequest, err)
		}
	}
	return rv, nil
}

func parseTenant(s string) (contract.TenantID, error) {
	if s == "" {
		return contract.TenantID{}, nil
	}
	t, err := contract.ParseU128(s)
	if err != nil {
		return t, fmt.Errorf("%w: tenant: %v", errBadRequest, err)
	}
	return t, nil
}

// revocationRoute is the handler of both revocation routes: store (Revoke or Lift) the
// request's revocation and answer ok.
func revocationRoute(store func(context.Context, redisCmdable, revocation.Revocation) error, ok int) handleFunc {
	return func(ctx context.Context, a *api, in input) (int, any, []any, error) {
		var req RevocationRequest
		if err := decode(in.body, &req); err != nil {
			return 0, nil, nil, err
		}
		rv, err := req.revocation()
		audit := []any{"user", req.User, "device", rv.Device}
		if err != nil {
			return 0, nil, audit, err
		}
		if err := store(ctx, a.rdb, rv); err != nil {
			return 0, nil, audit, err
		}
		if ok == http.StatusNoContent {
			return ok, nil, audit, nil
		}
		return ok, RevocationResponse{NotBefore: rv.NotBefore.UTC().Format(time.RFC3339Nano)}, audit, nil
	}
}

// maxDevTokenTTL bounds a minted dev token's life.
const maxDevTokenTTL = 7 * 24 * time.Hour

func devToken(_ context.Context, a *api, in input) (int, any, []any, error) {
	if len(a.secret) == 0 {
		return 0, nil, nil, fmt.Errorf("%w: dev tokens are off (no QIM_TOKEN_SECRET)", errNotFound)
	}
	var req DevTokenRequest
	if err := decode(in.body, &req); err != nil {
		return 0, nil, nil, err
	}
	audit := []any{"user", req.User, "device", req.Device}
	ttl := time.Duration(req.TTLSeconds) * time.Second
	if ttl == 0 {
		ttl = time.Hour
	}
	tenant, err := parseTenant(req.Tenant)
	if err != nil {
		return 0, nil, audit, err
	}
	if ttl < 0 || ttl > maxDevTokenTTL {
		return 0, nil, audit, fmt.Errorf("%w: ttl_seconds must be within 1..%d", errBadRequest, int(maxDevTokenTTL/time.Second))
	}
	exp := time.Now().Add(ttl)
	tok, err := devtoken.Issue(a.secret, devtoken.Claims{Tenant: tenant, User: contract.UserID(req.User), Device: req.Device, ExpiresAtMs: exp.UnixMilli()})
	if err != nil {
		return 0, nil, audit, fmt.Errorf("%w: %v", errBadRequest, err)
	}
	return http.StatusOK, DevTokenResponse{Token: tok, ExpiresAt: exp.UTC().Format(time.RFC3339)}, audit, nil
}

// decode reads a body strictly: an unknown field is refused (the document says
// additionalProperties: false), so a misspelt "device" cannot widen a revocation to every device.
func decode(body []byte, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return fmt.Errorf("%w: %v", errBadRequest, err)
	}
	return nil
}

// api serves the routes.
type api struct {
	keys     []apiKey
	rdb      redisCmdable
	groups   groupAdmin    // nil: group routes are off
	rooms    *roomWriters  // nil: room routes are off
	presence *presenceView // nil: GET /v1/devices is off
	secret   []byte
	log      *slog.Logger
	m        *metrics
	timeout  time.Duration
}

// handler wraps a route: authorize, read the bounded body, run, answer, audit.
func (a *api) handler(rt route) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key, err := authorize(a.keys, r, rt.scope)
		keyID := ""
		if key != nil {
			keyID = key.ID
		}
		status, resp, audit := 0, any(nil), []any(nil)
		switch {
		case errors.Is(err, errNoKey):
			status = http.StatusUnauthorized
		case errors.Is(err, errScope):
			status = http.StatusForbidden
		default:
			body, rerr := io.ReadAll(http.MaxBytesReader(w, r.Body, requestMaxBytes))
			if rerr != nil {
				err, status = fmt.Errorf("%w: body: %v", errBadRequest, rerr), http.StatusBadRequest
				break
			}
			ctx, cancel := context.WithTimeout(r.Context(), a.timeout)
			status, resp, audit, err = rt.handle(ctx, a, input{body: body, query: r.URL.Query()})
			cancel()
			status = statusOf(status, err)
		}
		a.answer(w, status, resp, err)
		a.m.requests.WithLabelValues(rt.method+" "+rt.path, fmt.Sprint(status)).Inc()
		a.log.Info("admin: audit", append([]any{"key", keyID, "method", rt.method, "route", rt.path, "status", status,
			"remote", r.RemoteAddr, "error", errText(err)}, audit...)...)
	}
}

// statusOf maps a handler's error to its HTTP status.
func statusOf(status int, err error) int {
	switch {
	case err == nil:
		return status
	case errors.Is(err, errBadRequest), errors.Is(err, revocation.ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, errNotFound):
		return http.StatusNotFound
	case errors.Is(err, errConflict):
		return http.StatusConflict
	}
	return http.StatusServiceUnavailable
}

func (a *api) answer(w http.ResponseWriter, status int, resp any, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	switch {
	case err != nil && status == http.StatusServiceUnavailable:
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "a store or a writer did not answer; retry"})
	case err != nil:
		_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
	case resp != nil:
		_ = json.NewEncoder(w).Encode(resp)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
