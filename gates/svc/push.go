package svc

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/qim-dev/qim/services/notify/provider/pushtest"
)

// PushStandIns are the push providers the Set's NotificationService calls: an FCM and an APNs
// stand-in (their keys and certificate written as files, as an operator would hand them over)
// and a webhook relay. They live until the Set's Close, like the IdP: a restarted notify must
// still reach them.
type PushStandIns struct {
	FCM                       *pushtest.FCM
	APNs                      *pushtest.APNs
	Webhook                   *pushtest.Webhook
	fcmCreds, apnsKey, apnsCA string
}

// startPush starts the stand-ins and writes the files the NotificationService is given.
func (s *Set) startPush() error {
	p := &PushStandIns{}
	var err error
	if p.FCM, err = pushtest.StartFCM(); err != nil {
		return err
	}
	s.push = p // from here Close stops what started
	if p.APNs, err = pushtest.StartAPNs(); err != nil {
		return err
	}
	if p.Webhook, err = pushtest.StartWebhook(); err != nil {
		return err
	}
	p.fcmCreds, p.apnsKey, p.apnsCA = filepath.Join(s.dir, "fcm-service-account.json"),
		filepath.Join(s.dir, "apns-key.p8"), filepath.Join(s.dir, "apns-ca.pem")
	return errors.Join(os.WriteFile(p.fcmCreds, p.FCM.ServiceAccountJSON(), 0o600),
		os.WriteFile(p.apnsKey, p.APNs.KeyP8(), 0o600), os.WriteFile(p.apnsCA, p.APNs.CertPEM(), 0o644))
}

// Push is the Set's push provider stand-ins (nil when it has none).
func (s *Set) Push() *PushStandIns { return s.push }

func (p *PushStandIns) close() {
	if p.FCM != nil {
		p.FCM.Close()
	}
	if p.APNs != nil {
		p.APNs.Close()
	}
	if p.Webhook != nil {
		p.Webhook.Close()
	}
}

// pushEnv points the NotificationService at the stand-ins.
func (s *Set) pushEnv(vars map[string]string) {
	if s.push == nil || !s.Notifies() {
		return
	}
	p := s.push
	vars["QIM_NOTIFY_WEBHOOK_URL"] = p.Webhook.Endpoint()
	vars["QIM_NOTIFY_FCM_CREDENTIALS"] = p.fcmCreds
	vars["QIM_NOTIFY_FCM_ENDPOINT"] = p.FCM.URL()
	vars["QIM_NOTIFY_APNS_KEY"] = p.apnsKey
	vars["QIM_NOTIFY_APNS_KEY_ID"] = p.APNs.KeyID()
	vars["QIM_NOTIFY_APNS_TEAM_ID"] = p.APNs.TeamID()
	vars["QIM_NOTIFY_APNS_ENDPOINT"] = p.APNs.URL()
	vars["QIM_NOTIFY_APNS_CA"] = p.apnsCA
}
