package stack

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// redisArgs are the persistence flags both providers give redis-server: AOF on, fsync policy
// per instance (core: always — commit facts must survive a crash; mailbox: everysec),
// no fsync pause during rewrites, never evict, no RDB snapshots.
func redisArgs(fsync string) []string {
	return []string{
		"--appendonly", "yes",
		"--appendfsync", fsync,
		"--no-appendfsync-on-rewrite", "no",
		"--maxmemory-policy", "noeviction",
		"--save", "",
	}
}

// redisBinary resolves redis-server or says how to install it.
func (s *processStack) redisBinary() (string, error) {
	if s.cfg.redisServer != "" {
		if _, err := os.Stat(s.cfg.redisServer); err != nil {
			return "", fmt.Errorf("stack: redis-server not found at %s: run `make setup` / scripts/setup.sh (apt-get install -y redis-server)", s.cfg.redisServer)
		}
		return s.cfg.redisServer, nil
	}
	p, err := exec.LookPath("redis-server")
	if err != nil {
		return "", fmt.Errorf("stack: redis-server not found: run `make setup` / scripts/setup.sh (apt-get install -y redis-server)")
	}
	return p, nil
}

func (s *processStack) redisSpec(name, fsync string) (serverSpec, error) {
	bin, err := s.redisBinary()
	if err != nil {
		return serverSpec{}, err
	}
	return serverSpec{
		name:  name,
		ports: 1,
		prepare: func([]int) error {
			if err := os.MkdirAll(filepath.Join(s.dir, "data", name), 0o755); err != nil {
				return err
			}
			return s.writeRedisACL(name)
		},
		// The same argv on a restart: redis replays the AOF it finds in --dir.
		run: func(ports []int) (*child, error) {
			data := filepath.Join(s.dir, "data", name)
			argv := append([]string{bin}, s.redisListenArgs(name, ports[0])...)
			argv = append(argv,
				"--bind", "127.0.0.1",
				"--dir", data,
				"--daemonize", "no",
				"--logfile", "", // stdout, appended to logs/<name>.log
				"--always-show-logo", "no")
			argv = append(argv, redisArgs(fsync)...)
			return spawn(name, s.dir, filepath.Join(s.dir, "logs", name+".log"), s.cfg.detached, nil, argv...)
		},
		probe: func(ctx context.Context, ports []int) error {
			return checkRedis(ctx, fmt.Sprintf("127.0.0.1:%d", ports[0]), fsync, s.sec)
		},
		ready: func(ports []int) {
			s.mu.Lock()
			defer s.mu.Unlock()
			addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
			if name == ServerRedisCore {
				s.ep.RedisCore = addr
			} else {
				s.ep.RedisMailbox = addr
			}
		},
	}, nil
}

// redisListenArgs: the plaintext port, or with secure stores TLS only (--port 0) and the ACL
// file. Clients need no certificate of their own (--tls-auth-clients no): they authenticate
// with the ACL user's password.
func (s *processStack) redisListenArgs(name string, port int) []string {
	if s.sec == nil {
		return []string{"--port", strconv.Itoa(port)}
	}
	t := tlsFiles(s.dir)
	return []string{"--port", "0", "--tls-port", strconv.Itoa(port),
		"--tls-cert-file", t.certFile, "--tls-key-file", t.keyFile, "--tls-ca-cert-file", s.sec.CAFile,
		"--tls-auth-clients", "no", "--aclfile", redisACLFile(s.dir, name)}
}

func redisACLFile(dir, name string) string { return filepath.Join(dir, "conf", name+"-users.acl") }

// writeRedisACL writes the ACL file of a secure stack: the default user off (a connection that
// has not authenticated can run nothing but AUTH and HELLO), and the stack's user with every
// command, key and channel. A file rather than --user flags keeps the password off the command
// line that ps shows.
func (s *processStack) writeRedisACL(name string) error {
	if s.sec == nil {
		return nil
	}
	pw, err := ReadPassword(s.sec.RedisPasswordFile)
	if err != nil {
		return err
	}
	acl := fmt.Sprintf("user default off\nuser %s on >%s ~* &* +@all\n", s.sec.RedisUser, pw)
	return os.WriteFile(redisACLFile(s.dir, name), []byte(acl), 0o600)
}
