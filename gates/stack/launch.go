package stack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// launch starts one server and waits for its readiness, retrying with new ports when the
// server died because its port was taken in the meantime.
func (s *processStack) launch(ctx context.Context, sp serverSpec) error {
	t0 := time.Now()
	for attempt := 1; ; attempt++ {
		ports, err := freePorts(sp.ports)
		if err != nil {
			return err
		}
		if err := sp.prepare(ports); err != nil {
			return err
		}
		c, err := sp.run(ports)
		if err != nil {
			return err
		}
		if err := s.register(c); err != nil {
			return err
		}
		err = s.waitReady(ctx, c, ports, sp.probe)
		if err == nil {
			d := time.Since(t0)
			sp.ready(ports)
			s.mu.Lock()
			s.readyIn[sp.name] = d
			s.launched[sp.name] = launched{spec: sp, ports: ports}
			s.mu.Unlock()
			s.progressf("%s ready in %.1fs (pid %d, 127.0.0.1:%d)", sp.name, d.Seconds(), c.pid, ports[0])
			return nil
		}
		var died *ServerDiedError
		if errors.As(err, &died) && attempt < 3 && portClash(died.LogTail) {
			s.progressf("%s lost a port race (%v); retrying with new ports", sp.name, ports)
			_ = os.RemoveAll(filepath.Join(s.dir, "data", sp.name))
			continue
		}
		return err
	}
}

func portClash(log string) bool {
	return strings.Contains(log, "Address already in use") || strings.Contains(log, "BindException")
}

func (s *processStack) register(c *child) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down { // Down ran while we were starting: do not leak the process
		_ = stopGroup(c.pid, 0, func() bool { d, _ := c.exited(); return d })
		return ErrNotRunning
	}
	if _, ok := s.children[c.server]; !ok {
		s.order = append(s.order, c.server)
	}
	s.children[c.server] = c
	return nil
}

// waitReady polls until c listens on all its ports (checked via /proc, so we know it is OUR
// server answering) and probe succeeds. It returns a *ServerDiedError as soon as c exits and a
// *NotReadyError on its readiness timeout or on a misconfiguration.
// Up and Restart both use it, so a restarted server meets the same bar as a new one.
func (s *processStack) waitReady(ctx context.Context, c *child, ports []int, probe func(context.Context, []int) error) error {
	timeout := readyTimeout[c.server]
	deadline := time.Now().Add(timeout)
	var last error
	for {
		if dead, detail := c.exited(); dead {
			return c.diedError(detail)
		}
		last = nil
		for _, p := range ports {
			if ok, err := ownsListener(c.pid, p); !ok {
				last = fmt.Errorf("port %d not yet bound by pid %d (%v)", p, c.pid, err)
				if h := portHolder(p); h != "" {
					last = fmt.Errorf("port %d is held by %s, not by our pid %d: pick other ports or stop that process", p, h, c.pid)
				}
				break
			}
		}
		if last == nil {
			pctx, cancel := context.WithTimeout(ctx, min(10*time.Second, max(time.Until(deadline), time.Second)))
			last = probe(pctx, ports)
			cancel()
			if last == nil {
				return nil
			}
			var mis *misconfigured
			if errors.As(last, &mis) {
				return &NotReadyError{Server: c.server, Detail: last.Error(), LogTail: tailFileOr(c.logPath, 50)}
			}
		}
		if time.Now().After(deadline) {
			return &NotReadyError{Server: c.server, Detail: fmt.Sprintf("not ready after %s: %v", timeout, last), LogTail: tailFileOr(c.logPath, 50)}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stack: %s: %w", c.server, ctx.Err())
		case <-c.done:
		case <-time.After(150 * time.Millisecond):
		}
	}
}
