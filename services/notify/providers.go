package notify

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/notify/provider"
)

// buildProviders loads every configured provider's key and builds it, keyed by the platform
// value devices register under. A key that does not load refuses the start: a deployment that
// configured APNs and silently served none would wake no iPhone.
func buildProviders(cfg Config) (map[contract.PushPlatform]provider.Provider, error) {
	out := map[contract.PushPlatform]provider.Provider{}
	if cfg.WebhookURL != "" {
		p, err := provider.NewWebhook(cfg.WebhookURL, nil, cfg.Timeout)
		if err != nil {
			return nil, fmt.Errorf("QIM_NOTIFY_WEBHOOK_URL: %w", err)
		}
		out[contract.PushWebhook] = p
	}
	if cfg.FCMCredentials != "" {
		sa, err := os.ReadFile(cfg.FCMCredentials)
		if err != nil {
			return nil, fmt.Errorf("QIM_NOTIFY_FCM_CREDENTIALS: %w", err)
		}
		p, err := provider.NewFCM(provider.FCMConfig{ServiceAccountJSON: sa, Endpoint: cfg.FCMEndpoint, Timeout: cfg.Timeout})
		if err != nil {
			return nil, fmt.Errorf("QIM_NOTIFY_FCM_CREDENTIALS: %w", err)
		}
		out[contract.PushFCM] = p
	}
	if cfg.APNsKey != "" {
		p, err := apns(cfg)
		if err != nil {
			return nil, err
		}
		out[contract.PushAPNs] = p
	}
	return out, nil
}

func apns(cfg Config) (provider.Provider, error) {
	key, err := os.ReadFile(cfg.APNsKey)
	if err != nil {
		return nil, fmt.Errorf("QIM_NOTIFY_APNS_KEY: %w", err)
	}
	client := &http.Client{Transport: &http.Transport{ForceAttemptHTTP2: true, Proxy: http.ProxyFromEnvironment}}
	if cfg.APNsCA != "" {
		pem, err := os.ReadFile(cfg.APNsCA)
		if err != nil {
			return nil, fmt.Errorf("QIM_NOTIFY_APNS_CA: %w", err)
		}
		roots, err := x509.SystemCertPool()
		if err != nil {
			roots = x509.NewCertPool()
		}
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("QIM_NOTIFY_APNS_CA: no PEM certificate in %s", cfg.APNsCA)
		}
		client.Transport = &http.Transport{ForceAttemptHTTP2: true, Proxy: http.ProxyFromEnvironment,
			TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}
	}
	p, err := provider.NewAPNs(provider.APNsConfig{KeyP8: key, KeyID: cfg.APNsKeyID, TeamID: cfg.APNsTeamID,
		Endpoint: cfg.APNsEndpoint, Client: client, Timeout: cfg.Timeout})
	if err != nil {
		return nil, fmt.Errorf("QIM_NOTIFY_APNS_KEY: %w", err)
	}
	return p, nil
}
