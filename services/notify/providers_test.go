package notify

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/notify/provider"
	"github.com/qim-dev/qim/services/notify/provider/pushtest"
)

// The providers built from the files an operator hands over (a service-account JSON, a .p8 key,
// an extra CA) reach the stand-ins and are accepted: the configuration path the harness uses.
func TestProvidersFromConfigFiles(t *testing.T) {
	fcm, err := pushtest.StartFCM()
	if err != nil {
		t.Fatal(err)
	}
	defer fcm.Close()
	apns, err := pushtest.StartAPNs()
	if err != nil {
		t.Fatal(err)
	}
	defer apns.Close()
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfg := DefaultConfig()
	cfg.KafkaBrokers, cfg.RedisAddr = []string{"127.0.0.1:9092"}, "127.0.0.1:6379"
	cfg.FCMCredentials, cfg.FCMEndpoint = write("sa.json", fcm.ServiceAccountJSON()), fcm.URL()
	cfg.APNsKey, cfg.APNsKeyID, cfg.APNsTeamID = write("key.p8", apns.KeyP8()), apns.KeyID(), apns.TeamID()
	cfg.APNsEndpoint, cfg.APNsCA = apns.URL(), write("ca.pem", apns.CertPEM())
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ps, err := buildProviders(cfg)
	if err != nil {
		t.Fatal(err)
	}
	n := provider.Notification{Tenant: tenant, User: 2, DeviceID: "phone", Token: strings.Repeat("ab", 32), AppID: "dev.qim.gate",
		Conversation: contract.DirectConversationID(tenant, 1, 2), ConversationSeq: 3, MessageID: contract.MessageID{Lo: 1},
		Sender: 1, Badge: -1, CollapseKey: "c"}
	for _, pl := range []contract.PushPlatform{contract.PushFCM, contract.PushAPNs} {
		if err := ps[pl].Send(context.Background(), n); err != nil {
			t.Errorf("%s: %v", pl, err)
		}
	}
	if fcm.Count(n.MessageID.String(), n.Token) != 1 || apns.Count(n.MessageID.String(), n.Token) != 1 {
		t.Errorf("deliveries: fcm %d, apns %d", fcm.Count(n.MessageID.String(), n.Token), apns.Count(n.MessageID.String(), n.Token))
	}
}
