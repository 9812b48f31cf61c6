package admin

// Session routes: kicks (end live sessions, credentials untouched) and where a user is online.

import (
	"context"
	"net/http"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/authn/revocation"
)

// KickRequest names the sessions to end.
type KickRequest struct {
	Tenant string `json:"tenant,omitempty" doc:"tenant as 32 hex digits (default: tenant 0)"`
	User   uint64 `json:"user" doc:"user id (from 1)"`
	Device string `json:"device,omitempty" doc:"device id; empty or \"*\": every device of the user"`
}

// KickResponse says how far the kick went. A kick is not stored: a gateway that was not
// subscribed when it was published does not see it (revoke to keep a user out).
type KickResponse struct {
	GatewaysReached int64 `json:"gateways_reached" doc:"gateways subscribed when the kick was published; each ends the covered sessions it holds"`
}

func kick(ctx context.Context, a *api, in input) (int, any, []any, error) {
	var req KickRequest
	if err := decode(in.body, &req); err != nil {
		return 0, nil, nil, err
	}
	k := revocation.Kick{User: contract.UserID(req.User), Device: req.Device}
	if k.Device == "" {
		k.Device = revocation.AllDevices
	}
	audit := []any{"user", req.User, "device", k.Device}
	var err error
	if k.Tenant, err = parseTenant(req.Tenant); err != nil {
		return 0, nil, audit, err
	}
	n, err := revocation.Publish(ctx, a.rdb, k)
	if err != nil {
		return 0, nil, audit, err
	}
	return http.StatusOK, KickResponse{GatewaysReached: n}, append(audit, "gateways_reached", n), nil
}
