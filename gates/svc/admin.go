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
	"strings"
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
	KeyFile string // a file holding Key, for qimctl admin --key-file
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
	a.KeyFile = filepath.Join(s.dir, "admin.key")
	if err := os.WriteFile(a.KeyFile, []byte(a.Key), 0o600); err != nil {
		return nil, fmt.Errorf("svc: admin key: %w", err)
	}
	keys := filepath.Join(s.dir, "admin-keys.json")
	entry := fmt.Sprintf(`{"keys":[{"id":%q,"sha256":%q,"scopes":["revocations","dev_tokens","sessions","groups","messages","rooms"]}]}`, a.KeyID, admin.KeyDigest(a.Key))
	if err := os.WriteFile(keys, []byte(entry), 0o600); err != nil {
		return nil, fmt.Errorf("svc: admin keys: %w", err)
	}
	ps, err := ports.Pick(2)
	if err != nil {
		return nil, fmt.Errorf("svc: %w", err)
	}
	listen, metrics := net.JoinHostPort("127.0.0.1", strconv.Itoa(ps[0])), net.JoinHostPort("127.0.0.1", strconv.Itoa(ps[1]))
	a.URL = "http://" + listen
	env := append([]string{"QIM_ADMIN_LISTEN=" + listen, "QIM_ADMIN_METRICS=" + metrics, "QIM_ADMIN_KEYS=" + keys,
		"QIM_REDIS_ADDR=" + s.ep.RedisCore, "QIM_TOKEN_SECRET=" + s.Addrs.TokenSecret}, s.adminBackends()...)
	a.p, err = proc.Start(proc.Spec{Name: "admin", Argv: []string{s.bin, "admin"}, LogPath: a.LogPath, Env: proc.BaseEnv(env...)})
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

// adminBackends is the admin API's view of the deployment: qim.presence (GET /v1/devices) and
// the writers with the admin certificate (the group routes), when the deployment has them.
func (s *Set) adminBackends() []string {
	env := []string{"QIM_KAFKA_BROKERS=" + strings.Join(s.ep.KafkaBrokers, ","),
		"QIM_MAILBOX_SHARD_COUNT=" + strconv.Itoa(s.ep.DispatchShards)}
	stores := map[string]string{}
	s.storeEnv("admin", stores)
	for k, v := range stores {
		env = append(env, k+"="+v)
	}
	if s.certs == nil {
		return env
	}
	var writers []string
	for _, name := range s.Instance(Writer) {
		writers = append(writers, s.Addrs.RPC[name])
	}
	c := s.certs.Certs["admin"]
	env = append(env, "QIM_WRITER_ADDRS="+strings.Join(writers, ","), "QIM_RPC_TLS_CA="+s.certs.CA,
		"QIM_RPC_TLS_CERT="+c.CertFile, "QIM_RPC_TLS_KEY="+c.KeyFile)
	if s.Rooms() { // the gateways' list, in their order: the admin API places rooms like they do
		var rooms []string
		for _, name := range s.Instance(Room) {
			rooms = append(rooms, s.Addrs.RPC[name])
		}
		env = append(env, "QIM_ROOM_ADDRS="+strings.Join(rooms, ","))
	}
	return env
}
