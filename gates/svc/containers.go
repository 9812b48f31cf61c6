package svc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/network"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/stack"
	"github.com/qim-dev/qim/services"
)

// ErrNoNetwork says StartContainers was given a stack without a network of its own.
var ErrNoNetwork = errors.New("svc: the stack has no network of its own (stack.NewContainers with stack.WithNetwork(true))")

// serviceStartTimeout bounds one service container from creation to a healthy /healthz.
const serviceStartTimeout = 2 * time.Minute

// Containers is a ContainerDeployment running beside a containers stack: the Q-IM services
// in containers, as compose.integration.yml runs them (ADR-0028).
type Containers struct {
	Gateways    []string // each gateway's client TCP listener on the host, instance 1 first
	TokenSecret string   // what the gateways' tokens are signed with (fresh per deployment)

	ctrs    []testcontainers.Container // in start order
	names   []string
	certDir string
}

// StartContainers starts ContainerDeployment(n) from image (scripts/image.sh builds qim-server:dev) on
// st's network, in start order, each waited for until its /healthz answers 200, with internal
// RPC on mTLS from a fresh development certificate set copied into each container. On an error
// the containers already started are stopped. progress gets one line per healthy service.
func StartContainers(ctx context.Context, st stack.Stack, n int, image string, progress io.Writer) (*Containers, error) {
	nw, _ := st.(stack.Networked)
	if nw == nil || nw.Network() == "" {
		return nil, ErrNoNetwork
	}
	ep := st.Endpoints()
	dir, err := os.MkdirTemp("", ep.Project+"-certs-")
	if err != nil {
		return nil, fmt.Errorf("svc: containers: %w", err)
	}
	c := &Containers{certDir: dir}
	certs, err := services.WriteDevCerts(dir, services.DevIdentities(n))
	if err != nil {
		return nil, errors.Join(fmt.Errorf("svc: containers: %w", err), c.Stop(ctx))
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, errors.Join(fmt.Errorf("svc: containers: token secret: %w", err), c.Stop(ctx))
	}
	c.TokenSecret = hex.EncodeToString(secret)
	t0 := time.Now()
	for _, d := range ContainerDeployment(n, contract.ShardCount(ep.DispatchShards), ep.CQL != "") {
		if err := c.start(ctx, d, image, nw.Network(), ep.Project, certs); err != nil {
			return nil, errors.Join(err, c.Stop(ctx))
		}
		fmt.Fprintf(progress, "containers %s: %s healthy in %.1fs\n", ep.Project, d.Name, time.Since(t0).Seconds())
	}
	return c, nil
}

func (c *Containers) start(ctx context.Context, d DeployedService, image, net, project string, certs *services.DevCerts) error {
	req, err := c.request(d, image, certs)
	if err != nil {
		return fmt.Errorf("svc: %s: %w", d.Name, err)
	}
	req.Labels = map[string]string{"dev.qim.project": project}
	if err := network.WithNetworkName([]string{d.Name}, net)(&req); err != nil {
		return fmt.Errorf("svc: %s: %w", d.Name, err)
	}
	ctr, err := testcontainers.GenericContainer(ctx, req)
	if ctr != nil {
		c.ctrs, c.names = append(c.ctrs, ctr), append(c.names, d.Name)
	}
	if err != nil {
		return fmt.Errorf("svc: %s: %w; last log lines:\n%s", d.Name, err, stack.ContainerLogTail(ctr, 30))
	}
	if d.Service == Gateway {
		addr, err := ctr.PortEndpoint(ctx, PortGatewayTCP+"/tcp", "")
		if err != nil {
			return fmt.Errorf("svc: %s: %w", d.Name, err)
		}
		c.Gateways = append(c.Gateways, addr)
	}
	return nil
}

// request is d's container: its variables, its certificate's (naming the files where they are
// copied) and the token secret for gateways.
func (c *Containers) request(d DeployedService, image string, certs *services.DevCerts) (testcontainers.GenericContainerRequest, error) {
	env := maps.Clone(d.Env)
	var files []testcontainers.ContainerFile
	if d.Identity != "" {
		cert, ok := certs.Certs[d.Identity]
		if !ok {
			return testcontainers.GenericContainerRequest{}, fmt.Errorf("no certificate %q in the development set", d.Identity)
		}
		for _, kv := range certs.EnvAt(d.Identity, CertDir) {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
		for _, f := range []string{certs.CA, cert.CertFile, cert.KeyFile} {
			files = append(files, testcontainers.ContainerFile{HostFilePath: f,
				ContainerFilePath: CertDir + "/" + filepath.Base(f), FileMode: 0o600})
		}
	}
	if d.Token {
		env["QIM_TOKEN_SECRET"] = c.TokenSecret
	}
	ports := []string{PortMetrics + "/tcp"}
	if d.Service == Gateway {
		ports = append(ports, PortGatewayTCP+"/tcp")
	}
	return testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Image: image, Cmd: []string{d.Service}, Env: env, Files: files, ExposedPorts: ports,
			WaitingFor: wait.ForHTTP("/healthz").WithPort(PortMetrics + "/tcp").WithStartupTimeout(serviceStartTimeout),
		},
		Started: true,
	}, nil
}

// Check reports the first service container that is no longer running.
func (c *Containers) Check(ctx context.Context) error {
	for i, ctr := range c.ctrs {
		st, err := ctr.State(ctx)
		if err != nil {
			return fmt.Errorf("svc: %s: inspect: %w", c.names[i], err)
		}
		if !st.Running {
			return fmt.Errorf("svc: %s is down (%s, exit code %d); last log lines:\n%s", c.names[i], st.Status, st.ExitCode, stack.ContainerLogTail(ctr, 30))
		}
	}
	return nil
}

// Stop terminates the service containers, callers first, and removes the certificate set.
func (c *Containers) Stop(context.Context) error {
	var errs []error
	for i := len(c.ctrs) - 1; i >= 0; i-- {
		if err := testcontainers.TerminateContainer(c.ctrs[i]); err != nil {
			errs = append(errs, fmt.Errorf("svc: terminate %s: %w", c.names[i], err))
		}
	}
	c.ctrs, c.names = nil, nil
	if c.certDir != "" {
		errs = append(errs, os.RemoveAll(c.certDir))
		c.certDir = ""
	}
	return errors.Join(errs...)
}
