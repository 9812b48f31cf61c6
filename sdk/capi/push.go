package main

import (
	"time"

	"github.com/qim-dev/qim/contract"
)

// registerPushToken is qim_register_push_token: the device's offline-push token (platform 1 FCM,
// 2 APNS with app_id the bundle id, 3 WEBHOOK; an empty token removes it). Mobile apps call it
// once connected, at every start and whenever the OS hands out a new token.
func registerPushToken(h uint64, platform int32, token, appID string, timeout time.Duration) (string, error) {
	cl, err := lookup(h)
	if err != nil {
		return "", err
	}
	p := contract.PushPlatform(platform)
	if token != "" && !p.Valid() {
		return "", errorf(codeInvalid, "platform %d is none of 1 FCM, 2 APNS, 3 WEBHOOK", platform)
	}
	ctx, cancel := callCtx(cl, timeout)
	defer cancel()
	if err := cl.c.RegisterPushToken(ctx, p, token, appID); err != nil {
		return "", classify(err)
	}
	return marshal(map[string]any{"registered": token != "", "platform": p.String()})
}
