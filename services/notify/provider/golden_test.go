package provider

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
)

// goldenNote is the notification the golden bodies encode.
func goldenNote(badge int) Notification {
	return Notification{
		Tenant: contract.U128{Hi: 1, Lo: 2}, User: 42, DeviceID: "phone", Token: "tok", AppID: "dev.qim.app",
		Conversation: contract.ConversationID{Hi: 3, Lo: 4}, ConversationSeq: 7,
		MessageID: contract.MessageID{Hi: 5, Lo: 6}, Sender: 43, Badge: badge, CollapseKey: "conv-3-4",
	}
}

// TestGoldenBodies freezes the three wire forms: a change here is a contract change with the
// providers (or, for the webhook, with the products' relays).
func TestGoldenBodies(t *testing.T) {
	const (
		tenant = `"00000000000000010000000000000002"`
		conv   = `"00000000000000030000000000000004"`
		msg    = `"00000000000000050000000000000006"`
	)
	for _, c := range []struct {
		name string
		body any
		want string
	}{
		{"webhook", webhookBodyOf(goldenNote(3)), `{"tenant":` + tenant + `,"user":42,"device":"phone","platform":"webhook",` +
			`"token":"tok","app_id":"dev.qim.app","conversation":` + conv + `,"conversation_seq":7,"message_id":` + msg +
			`,"sender":43,"badge":3,"collapse_key":"conv-3-4"}`},
		{"webhook no badge", webhookBodyOf(goldenNote(-1)), `{"tenant":` + tenant + `,"user":42,"device":"phone",` +
			`"platform":"webhook","token":"tok","app_id":"dev.qim.app","conversation":` + conv + `,"conversation_seq":7,` +
			`"message_id":` + msg + `,"sender":43,"collapse_key":"conv-3-4"}`},
		{"fcm", fcmBodyOf(goldenNote(3)), `{"message":{"token":"tok","data":{"badge":"3","conversation":` + conv +
			`,"conversation_seq":"7","message_id":` + msg + `,"sender":"43"},"android":{"collapse_key":"conv-3-4","priority":"high"}}}`},
		{"fcm no badge", fcmBodyOf(goldenNote(-1)), `{"message":{"token":"tok","data":{"conversation":` + conv +
			`,"conversation_seq":"7","message_id":` + msg + `,"sender":"43"},"android":{"collapse_key":"conv-3-4","priority":"high"}}}`},
		{"apns", apnsBodyOf(goldenNote(3)), `{"aps":{"badge":3,"content-available":1,"alert":{"loc-key":"qim.new_message"}},` +
			`"qim":{"conversation":` + conv + `,"conversation_seq":7,"message_id":` + msg + `,"sender":43}}`},
		{"apns no badge", apnsBodyOf(goldenNote(-1)), `{"aps":{"content-available":1,"alert":{"loc-key":"qim.new_message"}},` +
			`"qim":{"conversation":` + conv + `,"conversation_seq":7,"message_id":` + msg + `,"sender":43}}`},
	} {
		b, err := json.Marshal(c.body)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, b, c.want)
		}
	}
}

func TestTruncateUTF8(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"abc", 3, "abc"}, {"abcd", 3, "abc"}, {"abé", 3, "ab"}, {"abé", 4, "abé"}, {"日本", 5, "日"}, {"", 0, ""},
	} {
		if got := truncateUTF8(c.in, c.n); got != c.want {
			t.Errorf("truncateUTF8(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	for v, want := range map[string]time.Duration{"": 0, "0": 0, "-3": 0, "7": 7 * time.Second,
		"Wed, 21 Oct 2015 07:28:00 GMT": 0, "soon": 0} {
		h := http.Header{}
		if v != "" {
			h.Set("Retry-After", v)
		}
		if got := retryAfter(h); got != want {
			t.Errorf("retryAfter(%q) = %s, want %s", v, got, want)
		}
	}
}
