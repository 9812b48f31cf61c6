package gateway

// Offline-push registrations (REGISTER_PUSH_TOKEN): the gateway stores the device's token in
// the core Redis (services/internal/pushtoken), where the NotificationService reads it when a
// message reaches the user while none of their devices is online. The device is the session's,
// never a field of the request, so a client can only register or remove its own device. LOGOUT
// removes the registration (the user signed out: the device must stop being woken); a dropped
// connection keeps it (that is the case push exists for).

import (
	"context"
	"errors"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/services/internal/pushtoken"
)

// registerPushToken stores or removes the device's registration and answers PUSH_TOKEN_ACK.
func (c *conn) registerPushToken(ctx context.Context, j pullJob) bool {
	var m qimv1.RegisterPushToken
	if err := proto.Unmarshal(j.payload, &m); err != nil {
		return c.sendError(j.requestID, j.op, contract.ErrCodeInvalidArgument, "malformed RegisterPushToken")
	}
	r := pushtoken.Registration{DeviceID: c.sess.device, Platform: contract.PushPlatform(m.GetPlatform()), Token: m.GetToken(), AppID: m.GetAppId()}
	err := pushtoken.Register(ctx, c.s.rdb, c.sess.key.tenant, c.sess.key.user, r)
	switch {
	case errors.Is(err, pushtoken.ErrInvalid):
		return c.sendError(j.requestID, j.op, contract.ErrCodeInvalidArgument, err.Error())
	case err != nil:
		c.s.m.pushTokens.WithLabelValues("failed").Inc()
		return c.sendError(j.requestID, j.op, contract.ErrCodeUnavailable, "push registration not stored, retry")
	}
	outcome := map[bool]string{true: "registered", false: "removed"}[r.Token != ""]
	c.s.m.pushTokens.WithLabelValues(outcome).Inc()
	return c.reply(contract.OpPushTokenAck, j.requestID, &qimv1.PushTokenAck{Registered: r.Token != ""})
}

// forgetPushToken removes the device's registration at LOGOUT. A failure is counted and the
// logout goes on: the registration then expires (contract.PushTokenTTL) or is refused by its
// provider once the app is gone.
func (c *conn) forgetPushToken() {
	ctx, cancel := context.WithTimeout(c.ctx, c.s.cfg.BackendTimeout)
	defer cancel()
	r := pushtoken.Registration{DeviceID: c.sess.device}
	if err := pushtoken.Register(ctx, c.s.rdb, c.sess.key.tenant, c.sess.key.user, r); err != nil {
		c.s.m.pushTokens.WithLabelValues("failed").Inc()
		return
	}
	c.s.m.pushTokens.WithLabelValues("removed").Inc()
}
