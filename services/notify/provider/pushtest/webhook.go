package pushtest

import (
	"encoding/json"
	"net/http"

	"github.com/qim-dev/qim/services/notify/provider"
)

// Webhook stands in for a product's push relay (provider.WebhookProvider's peer).
type Webhook struct{ *Server }

// WebhookPath is where the stand-in takes pushes: configure URL() + WebhookPath.
const WebhookPath = "/push"

// StartWebhook starts a webhook stand-in on plain HTTP (the provider allows http on loopback).
func StartWebhook(opts ...Option) (*Webhook, error) {
	w := &Webhook{newServer(provider.Webhook, opts)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+WebhookPath, w.serve)
	if err := w.start(mux, false); err != nil {
		return nil, err
	}
	return w, nil
}

// Endpoint is the URL to give provider.NewWebhook.
func (w *Webhook) Endpoint() string { return w.URL() + WebhookPath }

// webhookWire is the webhook body as documented on provider.WebhookProvider, decoded
// independently of the provider's own type so that a renamed field fails here.
type webhookWire struct {
	Tenant          string `json:"tenant"`
	User            uint64 `json:"user"`
	Device          string `json:"device"`
	Platform        string `json:"platform"`
	Token           string `json:"token"`
	AppID           string `json:"app_id"`
	Conversation    string `json:"conversation"`
	ConversationSeq uint64 `json:"conversation_seq"`
	MessageID       string `json:"message_id"`
	Sender          uint64 `json:"sender"`
	Badge           *int   `json:"badge"`
	CollapseKey     string `json:"collapse_key"`
}

// serve answers like a relay: 400 to a body it cannot use, 410 to an invalidated token.
func (w *Webhook) serve(rw http.ResponseWriter, r *http.Request) {
	if f := w.attempt(); f != nil {
		f.writeHeader(rw)
		_ = json.NewEncoder(rw).Encode(map[string]string{"reason": f.reason})
		return
	}
	var m webhookWire
	if !w.decode(r, &m) {
		http.Error(rw, "bad push", http.StatusBadRequest)
		return
	}
	if w.isInvalid(m.Token) {
		rw.WriteHeader(http.StatusGone)
		return
	}
	d := Delivery{Token: m.Token, AppID: m.AppID, Tenant: m.Tenant, User: m.User, Device: m.Device,
		Conversation: m.Conversation, ConversationSeq: m.ConversationSeq, MessageID: m.MessageID,
		Sender: m.Sender, Badge: -1, CollapseKey: m.CollapseKey}
	if m.Badge != nil {
		d.Badge = *m.Badge
	}
	w.accept(d, r)
	rw.WriteHeader(http.StatusNoContent)
}

// decode reads the body strictly: JSON, no unknown fields, ids in 32 hex.
func (w *Webhook) decode(r *http.Request, m *webhookWire) bool {
	return decodeStrict(r, m) && m.Platform == string(provider.Webhook) && m.Token != "" &&
		hex32.MatchString(m.Tenant) && hex32.MatchString(m.Conversation) && hex32.MatchString(m.MessageID) &&
		(m.Badge == nil || *m.Badge >= 0)
}
