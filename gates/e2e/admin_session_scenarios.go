package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/svc"
	"github.com/qim-dev/qim/services/admin"
)

// scenarioAdminSessionsAndGroups drives the admin API's session and group routes against the
// deployment: where a user's two devices are online (qim.presence), a kick of one device on the
// last gateway (KICKED_BY_ADMIN within a second, the other device untouched, the same token
// accepted again), and a group created, changed and listed through the writers' GroupAdmin.
func scenarioAdminSessionsAndGroups(ctx context.Context, e *Env) error {
	a, err := e.Set.StartAdmin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = a.Stop() }()
	u, last := e.User(), e.Gateways[len(e.Gateways)-1]
	phone, phoneTok, err := adminLogin(ctx, e, a, u, "k-phone", last)
	if err != nil {
		return err
	}
	defer phone.Close()
	laptop, _, err := adminLogin(ctx, e, a, u, "k-laptop", e.Gateways[0])
	if err != nil {
		return err
	}
	defer laptop.Close()
	if err := waitOnline(ctx, e, a, u, []string{"k-laptop", "k-phone"}); err != nil {
		return err
	}
	// The kick goes through the operator's tool, qimctl admin kick, which calls the API.
	start := time.Now()
	var kicked admin.KickResponse
	if err := qimctlAdmin(ctx, e, a, &kicked, "kick", "--user", strconv.FormatUint(uint64(u), 10), "--device", "k-phone"); err != nil {
		return err
	}
	if kicked.GatewaysReached != int64(len(e.Gateways)) {
		return fmt.Errorf("the kick reached %d gateways, want all %d", kicked.GatewaysReached, len(e.Gateways))
	}
	if err := expectKick(phone, start, contract.KickByAdmin); err != nil {
		return fmt.Errorf("the kicked device: %w", err)
	}
	if _, err := laptop.Ping(ctx); err != nil {
		return fmt.Errorf("a device kick ended the user's other device: %w", err)
	}
	again, _, err := e.authAt(ctx, last, phoneTok, "")
	if err != nil {
		return fmt.Errorf("the kicked device's token, signing in again: %w", err)
	}
	again.Close()
	return adminGroups(ctx, e, a, u)
}

// adminLogin mints a dev token through the admin API and signs in with it at gateway.
func adminLogin(ctx context.Context, e *Env, a *svc.Admin, u contract.UserID, device, gateway string) (*Client, string, error) {
	var tok admin.DevTokenResponse
	req := admin.DevTokenRequest{Tenant: e.Tenant.String(), User: uint64(u), Device: device}
	if err := adminCall(ctx, a.URL, a.Key, http.MethodPost, "/v1/dev-tokens", req, 200, &tok); err != nil {
		return nil, "", err
	}
	c, _, err := e.authAt(ctx, gateway, tok.Token, "")
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", device, err)
	}
	return c, tok.Token, nil
}

// waitOnline polls GET /v1/devices until it lists exactly want, each on a gateway. Presence is
// published at AUTH_OK and folded in by the admin API's follower: a fetch or two.
func waitOnline(ctx context.Context, e *Env, a *svc.Admin, u contract.UserID, want []string) error {
	q := url.Values{"tenant": {e.Tenant.String()}, "user": {strconv.FormatUint(uint64(u), 10)}}
	var got admin.Devices
	for deadline := time.Now().Add(10 * time.Second); ; {
		if err := adminCall(ctx, a.URL, a.Key, http.MethodGet, "/v1/devices?"+q.Encode(), nil, 200, &got); err != nil {
			return err
		}
		var ids []string
		for _, d := range got.Online {
			if d.Gateway != "" {
				ids = append(ids, d.Device)
			}
		}
		if slices.Equal(ids, want) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("GET /v1/devices lists %+v 10 s after the logins, want %v", got.Online, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// adminGroups creates a group of u and a second user, adds a third, removes the second, and
// checks the member list after each change.
func adminGroups(ctx context.Context, e *Env, a *svc.Admin, u contract.UserID) error {
	u2, u3 := e.User(), e.User()
	var created admin.GroupChange
	req := admin.GroupCreateRequest{Tenant: e.Tenant.String(), Owner: uint64(u), Members: []uint64{uint64(u2)}, Name: "admin e2e"}
	if err := adminCall(ctx, a.URL, a.Key, http.MethodPost, "/v1/groups", req, 200, &created); err != nil {
		return err
	}
	if err := expectMembers(ctx, e, a, created.Group, u, u2); err != nil {
		return err
	}
	change := admin.GroupMembersRequest{Tenant: e.Tenant.String(), Group: created.Group, Users: []uint64{uint64(u3)}}
	var added admin.GroupChange
	if err := adminCall(ctx, a.URL, a.Key, http.MethodPost, "/v1/groups/members", change, 200, &added); err != nil {
		return err
	}
	if added.ConversationSeq <= created.ConversationSeq || added.MembershipVersion <= created.MembershipVersion {
		return fmt.Errorf("the add answered %+v after the create's %+v: want a later CONTROL seq and version", added, created)
	}
	change.Users = []uint64{uint64(u2)}
	if err := adminCall(ctx, a.URL, a.Key, http.MethodDelete, "/v1/groups/members", change, 200, nil); err != nil {
		return err
	}
	return expectMembers(ctx, e, a, created.Group, u, u3)
}

func expectMembers(ctx context.Context, e *Env, a *svc.Admin, group string, want ...contract.UserID) error {
	var got admin.GroupMembers
	if err := qimctlAdmin(ctx, e, a, &got, "group", "list", "--group", group); err != nil {
		return err
	}
	var ids []contract.UserID
	for _, m := range got.Members {
		ids = append(ids, contract.UserID(m.User))
	}
	slices.Sort(ids)
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		return fmt.Errorf("group %s lists members %v, want %v", group, ids, want)
	}
	return nil
}

// qimctlAdmin runs `qimctl admin <args>` against the admin API a and decodes its JSON output
// into out.
func qimctlAdmin(ctx context.Context, e *Env, a *svc.Admin, out any, args ...string) error {
	bin := e.Set.Qimctl()
	if bin == "" {
		return fmt.Errorf("%w: no qimctl beside the qim binary", ErrSkipped)
	}
	argv := append(append([]string{"admin"}, args...), "--url", a.URL, "--key-file", a.KeyFile, "--tenant", e.Tenant.String())
	b, err := exec.CommandContext(ctx, bin, argv...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return fmt.Errorf("qimctl %s: %w: %s", strings.Join(argv[:2], " "), err, ee.Stderr)
		}
		return fmt.Errorf("qimctl %s: %w", strings.Join(argv[:2], " "), err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("qimctl %s printed %q: %w", strings.Join(argv[:2], " "), b, err)
	}
	return nil
}
