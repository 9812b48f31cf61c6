package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/sdk"
)

// The API behind the exported functions, in Go types only: export.go converts C arguments and
// results around it, so tests drive it without cgo.

// config is the JSON configuration of qim_client_open.
type config struct {
	DataDir string `json:"data_dir"`
	Gateway string `json:"gateway"`
	TLS     bool   `json:"tls"`
	Tenant  string `json:"tenant"` // 32 hex digits; empty: tenant 0
	User    string `json:"user"`   // decimal
	Device  string `json:"device"`
	Token   string `json:"token"`
}

// parseConfig decodes and checks a configuration; unknown fields are refused, so a misspelt
// option is an error rather than a default.
func parseConfig(s string) (sdk.Config, error) {
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.DisallowUnknownFields()
	var c config
	if err := dec.Decode(&c); err != nil {
		return sdk.Config{}, errorf(codeInvalid, "configuration: %v", err)
	}
	user, err := strconv.ParseUint(c.User, 10, 64)
	if err != nil || user == 0 {
		return sdk.Config{}, errorf(codeInvalid, "configuration: user %q is not a non-zero decimal user id", c.User)
	}
	var tenant contract.TenantID
	if c.Tenant != "" {
		if tenant, err = contract.ParseU128(c.Tenant); err != nil {
			return sdk.Config{}, errorf(codeInvalid, "configuration: tenant: %v", err)
		}
	}
	mode := contract.ModeTCP
	if c.TLS {
		mode = contract.ModeTLS
	}
	cfg := sdk.Config{DataDir: c.DataDir, Endpoint: contract.Endpoint{Address: c.Gateway, Mode: mode}, Tenant: tenant,
		User: contract.UserID(user), Device: c.Device, Token: sdk.StaticToken(c.Token), ClientVersion: "qim-capi/1"}
	if c.Token == "" {
		return sdk.Config{}, errorf(codeInvalid, "configuration: token is required")
	}
	if err := cfg.Validate(); err != nil {
		return sdk.Config{}, errorf(codeInvalid, "configuration: %v", err)
	}
	return cfg, nil
}

func openClient(configJSON string) (uint64, error) {
	cfg, err := parseConfig(configJSON)
	if err != nil {
		return 0, err
	}
	c, err := sdk.Open(cfg)
	if err != nil {
		return 0, classify(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return register(&client{c: c, ctx: ctx, cancel: cancel}), nil
}

func connect(h uint64) error {
	cl, err := lookup(h)
	if err != nil {
		return err
	}
	return classify(cl.c.Connect(cl.ctx))
}

func closeClient(h uint64) error {
	cl, err := unregister(h)
	if err != nil {
		return err
	}
	cl.cancel()
	return classify(cl.c.Close())
}

func send(h uint64, peer string, body []byte) (string, error) {
	cl, err := lookup(h)
	if err != nil {
		return "", err
	}
	user, err := strconv.ParseUint(peer, 10, 64)
	if err != nil || user == 0 {
		return "", errorf(codeInvalid, "peer %q is not a non-zero decimal user id", peer)
	}
	cmid, err := cl.c.Send(cl.ctx, contract.UserID(user), body, sdk.SendOptions{})
	if err != nil {
		return "", classify(err)
	}
	return contract.U128(cmid).String(), nil
}

func sendGroup(h uint64, group string, body []byte) (string, error) {
	cl, conv, err := convTarget(h, group)
	if err != nil {
		return "", err
	}
	cmid, err := cl.c.SendGroup(cl.ctx, conv, body, sdk.SendOptions{})
	if err != nil {
		return "", classify(err)
	}
	return contract.U128(cmid).String(), nil
}

// nextEvent waits up to timeout for the client's next event.
func nextEvent(h uint64, timeout time.Duration) (string, error) {
	cl, err := lookup(h)
	if err != nil {
		return "", err
	}
	var t <-chan time.Time
	if timeout > 0 {
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		t = timer.C
	}
	select {
	case ev, ok := <-cl.c.Events():
		if !ok {
			return "", errorf(codeClosed, "the client is closed")
		}
		return eventJSON(ev)
	default:
	}
	if t == nil {
		return "", errorf(codeTimeout, "no event")
	}
	select {
	case ev, ok := <-cl.c.Events():
		if !ok {
			return "", errorf(codeClosed, "the client is closed")
		}
		return eventJSON(ev)
	case <-t:
		return "", errorf(codeTimeout, "no event within %s", timeout)
	}
}

func conversations(h uint64) (string, error) {
	cl, err := lookup(h)
	if err != nil {
		return "", err
	}
	cs, err := cl.c.Conversations(cl.ctx)
	if err != nil {
		return "", classify(err)
	}
	return marshal(map[string]any{"conversations": conversationsJSON(cs)})
}

func history(h uint64, conv string, anchor uint64, dir, limit int, timeout time.Duration) (string, error) {
	cl, id, err := convTarget(h, conv)
	if err != nil {
		return "", err
	}
	if dir != int(sdk.Direction(1)) && dir != int(sdk.Direction(2)) {
		return "", errorf(codeInvalid, "direction %d: want 1 (older) or 2 (newer)", dir)
	}
	ctx, cancel := callCtx(cl, timeout)
	defer cancel()
	p, err := cl.c.History(ctx, id, contract.ConversationSeq(anchor), sdk.Direction(dir), limit)
	if err != nil {
		return "", classify(err)
	}
	return marshal(map[string]any{"messages": messagesJSON(p.Messages), "has_more": p.HasMore, "from_server": p.FromServer})
}

func markRead(h uint64, conv string, seq uint64) (string, error) {
	cl, id, err := convTarget(h, conv)
	if err != nil {
		return "", err
	}
	c, err := cl.c.MarkRead(cl.ctx, id, contract.ConversationSeq(seq))
	if err != nil {
		return "", classify(err)
	}
	return marshal(conversationJSON(c))
}

// convTarget resolves a call's handle and conversation (32 hex digits).
func convTarget(h uint64, conv string) (*client, contract.ConversationID, error) {
	cl, err := lookup(h)
	if err != nil {
		return nil, contract.ConversationID{}, err
	}
	id, err := parseConversation(conv)
	if err != nil {
		return nil, contract.ConversationID{}, err
	}
	return cl, id, nil
}

func parseConversation(s string) (contract.ConversationID, error) {
	u, err := contract.ParseU128(s)
	if err != nil {
		return contract.ConversationID{}, errorf(codeInvalid, "conversation %q is not 32 hex digits", s)
	}
	b := u.Bytes()
	c, err := contract.ParseConversationID(b[:])
	if err != nil {
		return contract.ConversationID{}, errorf(codeInvalid, "conversation %s: %v", s, err)
	}
	return c, nil
}
