package svc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/qim-dev/qim/gates/ports"
	"github.com/qim-dev/qim/gates/proc"
	"github.com/qim-dev/qim/services/admin"
)

// Admin is a `qim admin` started beside the Set on demand (not one of its services: the
// deployment runs without it), with one API key holding every scope.
type Admin struct {
	URL     string // http://127.0.0.1:<port>
	Key     string // the API key (bearer)
	KeyID   string // its id in the audit log
	LogPath string
	p       *proc.Process
}

// StartAdmin starts `qim admin` on the Set's core Redis and dev-token secret and waits for its
// /healthz.
func (s *Set) StartAdmin(ctx context.Context) (*Admin, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	a := &Admin{Key: hex.EncodeToString(b), KeyID: "gate", LogPath: filepath.Join(s.dir, "admin.log")}
	keys := filepath.Join(s.dir, "admin-keys.json")
	entry := fmt.Sprintf(`{"keys":[{"id":%q,"sha256":%q,"scopes":["revocations","dev_tokens"]}]}`, a.KeyID, admin.KeyDigest(a.Key))
	if err := os.WriteFile(keys, []byte(entry), 0o600); err != nil {
		return nil, fmt.Errorf("svc: admin keys: %w", err)
	}
	ps, err := ports.Pick(2)
	if err != nil {
		return nil, fmt.Errorf("svc: %w", err)
	}
	listen, metrics := net.JoinHostPort("127.0.0.1", strconv.Itoa(ps[0])), net.JoinHostPort("127.0.0.1", strconv.Itoa(ps[1]))
	a.URL = "http://" + listen
	a.p, err = proc.Start(proc.Spec{Name: "admin", Argv: []string{s.bin, "admin"}, LogPath: a.LogPath,
		Env: proc.BaseEnv("QIM_ADMIN_LISTEN="+listen, "QIM_ADMIN_METRICS="+metrics, "QIM_ADMIN_KEYS="+keys,
			"QIM_REDIS_ADDR="+s.ep.RedisCore, "QIM_TOKEN_SECRET="+s.Addrs.TokenSecret)})
	if err != nil {
		return nil, fmt.Errorf("svc: %w", err)
	}
	deadline := time.Now().Add(startTimeout)
	for !healthy(ctx, "http://"+metrics+"/healthz") {
		if !a.p.Alive() || time.Now().After(deadline) || ctx.Err() != nil {
			_ = a.Stop()
			return nil, fmt.Errorf("svc: qim admin not healthy within %s; log tail:\n%s", startTimeout, proc.Tail(a.LogPath, 20))
		}
		time.Sleep(100 * time.Millisecond)
	}
	return a, nil
}

// Stop ends the admin API process.
func (a *Admin) Stop() error { return a.p.Kill(10 * time.Second) }
