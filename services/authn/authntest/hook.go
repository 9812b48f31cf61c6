package authntest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The IdP's connect webhook answers by the token's own text, so a test says in the token what
// it wants back:
//
//	hook-ok:<user>:<tenant>:<device>:<ttl seconds>  200 with that identity ("" device: none;
//	                                               ttl 0: no expires_at)
//	hook-deny:<anything>                           403
//	hook-garbage:<anything>                        200 with a body that is not an answer
//
// anything else is 403.

// HookURL is the connect webhook's URL.
func (p *IdP) HookURL() string { return strings.TrimSuffix(p.url, "/jwks.json") + "/connect" }

// HookCalls counts the calls the webhook answered or refused.
func (p *IdP) HookCalls() int64 { return p.hookCalls.Load() }

// SetHookFailing makes the webhook answer 503 (true) or answer again (false).
func (p *IdP) SetHookFailing(on bool) { p.hookFailing.Store(on) }

// SetHookDelay makes the webhook wait d before answering.
func (p *IdP) SetHookDelay(d time.Duration) { p.hookDelay.Store(int64(d)) }

// HookToken is the token the webhook accepts as (user, tenant, device) for ttl.
func HookToken(user uint64, tenant uint64, device string, ttl time.Duration) string {
	return "hook-ok:" + strconv.FormatUint(user, 10) + ":" + strconv.FormatUint(tenant, 10) + ":" + device + ":" +
		strconv.FormatInt(int64(ttl/time.Second), 10)
}

func (p *IdP) serveHook(w http.ResponseWriter, r *http.Request) {
	p.hookCalls.Add(1)
	if d := time.Duration(p.hookDelay.Load()); d > 0 {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
	}
	if p.hookFailing.Load() {
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
		return
	}
	var req struct {
		Token string `json:"token"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	f := strings.Split(req.Token, ":")
	switch {
	case f[0] == "hook-garbage":
		_, _ = w.Write([]byte(`{"user": "not a user"`))
	case f[0] == "hook-ok" && len(f) == 5:
		ans := map[string]any{"user": f[1], "tenant": f[2]}
		if f[3] != "" {
			ans["device"] = f[3]
		}
		if ttl, _ := strconv.Atoi(f[4]); ttl > 0 {
			ans["expires_at"] = time.Now().Add(time.Duration(ttl) * time.Second).Unix()
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(ans)
	default:
		http.Error(w, "forbidden", http.StatusForbidden)
	}
}
