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
			return os.MkdirAll(filepath.Join(s.dir, "data", name), 0o755)
		},
		// The same argv on a restart: redis replays the AOF it finds in --dir.
		run: func(ports []int) (*child, error) {
			data := filepath.Join(s.dir, "data", name)
			argv := append([]string{bin,
				"--port", strconv.Itoa(ports[0]),
				"--bind", "127.0.0.1",
				"--dir", data,
				"--daemonize", "no",
				"--logfile", "", // stdout, appended to logs/<name>.log
				"--always-show-logo", "no",
			}, redisArgs(fsync)...)
			return spawn(name, s.dir, filepath.Join(s.dir, "logs", name+".log"), s.cfg.detached, nil, argv...)
		},
		probe: func(ctx context.Context, ports []int) error {
			return checkRedis(ctx, fmt.Sprintf("127.0.0.1:%d", ports[0]), fsync)
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
