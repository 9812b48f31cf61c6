package stack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/testcontainers/testcontainers-go"
	tcredis "github.com/testcontainers/testcontainers-go/modules/redis"
	"github.com/testcontainers/testcontainers-go/wait"
	"golang.org/x/sync/errgroup"
)

// NewContainers returns a Stack on a Docker-compatible engine via testcontainers-go: redis:7.2
// twice via modules/redis (same persistence flags as the process provider), Redpanda as the
// Kafka-API broker (GenericContainer, see runRedpanda) and,
// WithCQL, ScyllaDB. Readiness uses the same checks as the process provider (readiness.go).
// Options that apply: WithProjectID, WithCQL, WithDispatchShards, WithProgress, WithImages and
// WithNetwork (the servers on a network of the stack's own, for the service containers of
// gates/svc.StartContainers: compose.integration.yml's topology).
// Without an engine Up fails at provider creation; tests guard with
// testcontainers.SkipIfProviderIsNotHealthy.
//
// It does not implement Faults: a restarted container gets new mapped ports, and the chaos
// matrix needs a server back on the same address. Callers type-assert and skip the faults.
func NewContainers(opts ...Option) Stack {
	cfg := newConfig(opts)
	name := projectPrefix + cfg.id
	return &containersStack{
		cfg: cfg, name: name,
		ep:   Endpoints{Project: name, Provider: "containers", DispatchShards: cfg.shards},
		ctrs: map[string]testcontainers.Container{},
	}
}

type containersStack struct {
	cfg  *config
	name string

	mu    sync.Mutex
	ep    Endpoints
	ctrs  map[string]testcontainers.Container
	order []string
	down  bool

	nw *testcontainers.DockerNetwork // WithNetwork only: every server's network
}

func (s *containersStack) labels() testcontainers.CustomizeRequestOption {
	return testcontainers.WithLabels(map[string]string{"dev.qim.project": s.name})
}

func (s *containersStack) Up(ctx context.Context) error {
	if s.cfg.secure {
		return errors.New("stack: WithSecureStores is implemented by the process provider only")
	}
	if err := s.createNetwork(ctx); err != nil {
		return err
	}
	type job struct {
		server string
		run    func(context.Context) (testcontainers.Container, string, error) // container, endpoint
		probe  func(context.Context, string) error
		set    func(string)
	}
	redisJob := func(server, fsync string, set func(string)) job {
		return job{server: server,
			run: func(ctx context.Context) (testcontainers.Container, string, error) {
				c, err := tcredis.Run(ctx, s.cfg.redisImage, s.labels(), s.onNetwork(server),
					testcontainers.WithCmd(append([]string{"redis-server"}, redisArgs(fsync)...)...))
				if c == nil {
					return nil, "", err
				}
				if err != nil {
					return c, "", err
				}
				addr, err := c.PortEndpoint(ctx, "6379/tcp", "")
				return c, addr, err
			},
			probe: func(ctx context.Context, addr string) error { return checkRedis(ctx, addr, fsync, nil) },
			set:   set,
		}
	}
	jobs := []job{
		redisJob(ServerRedisCore, "always", func(a string) { s.ep.RedisCore = a }),
		redisJob(ServerRedisMailbox, "everysec", func(a string) { s.ep.RedisMailbox = a }),
		{server: ServerKafka, run: s.runRedpanda,
			probe: func(ctx context.Context, addr string) error {
				return checkKafka(ctx, []string{addr}, s.cfg.shards, nil)
			},
			set: func(a string) { s.ep.KafkaBrokers = []string{a} },
		},
	}
	if s.cfg.cql {
		jobs = append(jobs, job{server: ServerCQL,
			run: func(ctx context.Context) (testcontainers.Container, string, error) {
				req := testcontainers.GenericContainerRequest{
					ContainerRequest: testcontainers.ContainerRequest{
						Image:        s.cfg.scyllaImage,
						ExposedPorts: []string{"9042/tcp"},
						// One replica: the archiver refuses a periodic commitlog (cqlstore.CheckDurability).
						Cmd:        []string{"--smp", "1", "--memory", "1G", "--overprovisioned", "1", "--commitlog-sync", "batch"},
						Labels:     map[string]string{"dev.qim.project": s.name},
						WaitingFor: wait.ForListeningPort("9042/tcp").WithStartupTimeout(readyTimeout[ServerCQL]),
					},
					Started: true,
				}
				if err := s.onNetwork(HostCQL)(&req); err != nil {
					return nil, "", err
				}
				c, err := testcontainers.GenericContainer(ctx, req)
				if c == nil || err != nil {
					return c, "", err
				}
				addr, err := c.PortEndpoint(ctx, "9042/tcp", "")
				return c, addr, err
			},
			probe: func(ctx context.Context, addr string) error { return checkCQL(ctx, addr, nil) },
			set:   func(a string) { s.ep.CQL = a },
		})
	}

	// The first server that fails cancels the others' start; Wait returns that first error.
	g, ctx := errgroup.WithContext(ctx)
	t0 := time.Now()
	for _, j := range jobs {
		g.Go(func() error {
			c, addr, err := j.run(ctx)
			if c != nil {
				s.mu.Lock()
				s.ctrs[j.server] = c
				s.order = append(s.order, j.server)
				s.mu.Unlock()
			}
			if err == nil {
				err = s.waitReady(ctx, j.server, c, func(ctx context.Context) error { return j.probe(ctx, addr) })
			}
			if err != nil {
				return fmt.Errorf("stack: %s: %w", j.server, err)
			}
			s.mu.Lock()
			j.set(addr)
			s.mu.Unlock()
			fmt.Fprintf(s.cfg.progress, "stack %s: %s ready in %.1fs (%s)\n", s.name, j.server, time.Since(t0).Seconds(), addr)
			return nil
		})
	}
	return g.Wait()
}

// runRedpanda starts Redpanda as a GenericContainer. (modules/redpanda v0.40.0, the newest the
// Go proxy serves, does not compile against testcontainers-go v0.45.0: it still uses the
// docker/docker container and nat types.) The Kafka listener uses the same port number inside
// and outside the container so the advertised address is the one clients dial.
func (s *containersStack) runRedpanda(ctx context.Context) (testcontainers.Container, string, error) {
	prov, err := testcontainers.NewDockerProvider()
	if err != nil {
		return nil, "", err
	}
	host, err := prov.DaemonHost(ctx)
	_ = prov.Close()
	if err != nil {
		return nil, "", err
	}
	ports, err := freePorts(1)
	if err != nil {
		return nil, "", err
	}
	p := strconv.Itoa(ports[0])
	// Two listeners, as in compose.integration.yml: containers on the stack's network dial
	// redpanda:9092 (WithNetwork), the host dials the published port.
	req := testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Image:        s.cfg.redpandaImage,
			ExposedPorts: []string{p + "/tcp"},
			Cmd: []string{"redpanda", "start", "--mode=dev-container", "--smp=1", "--memory=1G", "--overprovisioned",
				"--kafka-addr", "internal://0.0.0.0:" + PortKafkaInternal + ",external://0.0.0.0:" + p,
				"--advertise-kafka-addr", "internal://" + HostKafka + ":" + PortKafkaInternal + ",external://" + net.JoinHostPort(host, p)},
			Labels: map[string]string{"dev.qim.project": s.name},
			HostConfigModifier: func(hc *container.HostConfig) {
				hc.PortBindings = network.PortMap{network.MustParsePort(p + "/tcp"): {{HostPort: p}}}
			},
			WaitingFor: wait.ForLog("Successfully started Redpanda!").WithStartupTimeout(readyTimeout[ServerKafka]),
		},
		Started: true,
	}
	if err := s.onNetwork(HostKafka)(&req); err != nil {
		return nil, "", err
	}
	c, err := testcontainers.GenericContainer(ctx, req)
	if c == nil || err != nil {
		return c, "", err
	}
	return c, net.JoinHostPort(host, p), nil
}

func (s *containersStack) waitReady(ctx context.Context, server string, c testcontainers.Container, probe func(context.Context) error) error {
	timeout := readyTimeout[server]
	deadline := time.Now().Add(timeout)
	for {
		if err := s.checkOne(ctx, server, c); err != nil {
			return err
		}
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := probe(pctx)
		cancel()
		var mis *misconfigured
		switch {
		case err == nil:
			return nil
		case errors.As(err, &mis):
			return &NotReadyError{Server: server, Detail: err.Error(), LogTail: s.tail(c, 50)}
		case time.Now().After(deadline):
			return &NotReadyError{Server: server, Detail: fmt.Sprintf("not ready after %s: %v", timeout, err), LogTail: s.tail(c, 50)}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (s *containersStack) checkOne(ctx context.Context, server string, c testcontainers.Container) error {
	st, err := c.State(ctx)
	if err != nil {
		return &ServerDiedError{Server: server, Detail: "inspect: " + err.Error(), LogTail: s.tail(c, 50)}
	}
	if !st.Running {
		return &ServerDiedError{Server: server, Detail: fmt.Sprintf("container %s (exit code %d)", st.Status, st.ExitCode), LogTail: s.tail(c, 50)}
	}
	return nil
}

func (s *containersStack) tail(c testcontainers.Container, n int) string {
	return ContainerLogTail(c, n)
}

// ContainerLogTail is the last n lines of a container's log, or why there are none: for
// errors that should show what the container said last.
func ContainerLogTail(c testcontainers.Container, n int) string {
	if c == nil {
		return "(no container)"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rc, err := c.Logs(ctx)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer rc.Close()
	b, _ := io.ReadAll(rc) // a diagnostic: a short read still helps
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (s *containersStack) Down(context.Context) error {
	s.mu.Lock()
	if s.down {
		s.mu.Unlock()
		return nil
	}
	s.down = true
	ctrs := make(map[string]testcontainers.Container, len(s.ctrs))
	for k, v := range s.ctrs {
		ctrs[k] = v
	}
	s.mu.Unlock()
	var errs []error
	for server, c := range ctrs {
		if err := testcontainers.TerminateContainer(c); err != nil {
			errs = append(errs, fmt.Errorf("stack: terminate %s: %w", server, err))
		}
	}
	if err := s.removeNetwork(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (s *containersStack) Endpoints() Endpoints {
	s.mu.Lock()
	defer s.mu.Unlock()
	ep := s.ep
	ep.KafkaBrokers = append([]string(nil), s.ep.KafkaBrokers...)
	return ep
}

func (s *containersStack) Logs(server string, n int) (string, error) {
	s.mu.Lock()
	c, ok := s.ctrs[server]
	s.mu.Unlock()
	if !ok {
		return "", fmt.Errorf("stack: no container for %q", server)
	}
	return s.tail(c, n), nil
}

func (s *containersStack) Check(ctx context.Context) error {
	s.mu.Lock()
	if s.down {
		s.mu.Unlock()
		return ErrNotRunning
	}
	order := append([]string(nil), s.order...)
	ctrs := s.ctrs
	s.mu.Unlock()
	for _, server := range order {
		if err := s.checkOne(ctx, server, ctrs[server]); err != nil {
			return err
		}
	}
	return nil
}
