package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/qim-dev/qim/gates/svc"
)

// The network layer of the chaos cells (issue 42, item 1): a link is one variable of one
// process that names where it dials (a writer's QIM_REDIS_ADDR, a gateway's QIM_WRITER_ADDRS).
// For a cell with links, the harness starts an in-process toxiproxy proxy per address before the
// deployment, reroutes the variable to it (svc.Set.Reroute, so restarts keep it) and the cell's
// faults add and remove toxics on it: latency with jitter, a blackhole, connection cuts, a half-open
// connection. Everything else of the deployment dials the servers directly, and so do the
// judges.
//
// toxiproxy in-process rather than a hand-written relay: its toxics are the fault classes
// wanted, years of use by its authors' own resilience tests, and per-direction streams. The
// kernel has no netem qdisc here, so a proxy is the only way to shape one link.
//
// Rejected: a toxiproxy-server child process driven over its HTTP API; nothing is gained from
// the extra process, and its binary is not installable here.

// Link names one proxied path of a cell.
type Link struct {
	Name    string // what faults name it by, e.g. "writer→redis-core"
	Process string // the dialling process (svc process name: writer, writer-2, gateway)
	Var     string // its variable naming the address(es), comma-separated lists included
}

// netLinks are the running proxies of one cell, by link name.
type netLinks struct {
	server  *toxiproxy.ApiServer
	mu      sync.Mutex
	proxies map[string][]*toxiproxy.Proxy
}

// ErrNoLink is wrapped when a fault names a link its cell did not declare.
var ErrNoLink = errors.New("chaos: no such link in this cell")

// startLinks proxies every link of a cell on set (before set starts anything). On an error the
// proxies already started are stopped.
func startLinks(set *svc.Set, links []Link) (*netLinks, error) {
	if len(links) == 0 {
		return nil, nil
	}
	n := newNetLinks()
	for _, l := range links {
		if err := n.start(set, l); err != nil {
			n.stop()
			return nil, err
		}
	}
	return n, nil
}

func newNetLinks() *netLinks {
	return &netLinks{server: toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop()),
		proxies: map[string][]*toxiproxy.Proxy{}}
}

func (n *netLinks) start(set *svc.Set, l Link) error {
	upstream := envValue(set.Env(l.Process), l.Var)
	if upstream == "" {
		return fmt.Errorf("chaos: link %s: %s has no %s to proxy", l.Name, l.Process, l.Var)
	}
	var listen []string
	for _, addr := range strings.Split(upstream, ",") {
		at, err := n.proxy(l.Name, addr)
		if err != nil {
			return err
		}
		listen = append(listen, at)
	}
	set.Reroute(l.Process, l.Var, strings.Join(listen, ","))
	return nil
}

// proxy starts one more proxy of link in front of upstream and returns where it listens.
func (n *netLinks) proxy(link, upstream string) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	p := toxiproxy.NewProxy(n.server, fmt.Sprintf("%s#%d", link, len(n.proxies[link])), "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		return "", fmt.Errorf("chaos: link %s: proxy for %s: %w", link, upstream, err)
	}
	n.proxies[link] = append(n.proxies[link], p)
	return p.Listen, nil
}

// envValue is the value of key in a KEY=VALUE list (the last one, as exec uses).
func envValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// toxic is one toxiproxy toxic: type and attributes as its JSON API names them; stream is
// "upstream" (what the dialling process sends) or "downstream" (what it receives).
type toxic struct {
	Name       string         `json:"name"`
	Type       string         `json:"type"`
	Stream     string         `json:"stream"`
	Toxicity   float32        `json:"toxicity"`
	Attributes map[string]any `json:"attributes"`
}

// add puts toxics on every proxy of link.
func (n *netLinks) add(link string, toxics ...toxic) error {
	return n.locked(link, func(proxies []*toxiproxy.Proxy) error {
		for _, p := range proxies {
			for _, tx := range toxics {
				tx.Toxicity = 1
				b, err := json.Marshal(tx)
				if err != nil {
					return fmt.Errorf("chaos: link %s: toxic %s: %w", link, tx.Name, err)
				}
				if _, err := p.Toxics.AddToxicJson(bytes.NewReader(b)); err != nil {
					return fmt.Errorf("chaos: link %s: toxic %s: %w", link, tx.Name, err)
				}
			}
		}
		return nil
	})
}

// clear removes every toxic of link; connections a blackhole held are closed by the removal
// (their dropped bytes make them unusable), so the processes dial again.
func (n *netLinks) clear(ctx context.Context, link string) error {
	return n.locked(link, func(proxies []*toxiproxy.Proxy) error {
		for _, p := range proxies {
			p.Toxics.ResetToxics(ctx)
		}
		return nil
	})
}

// locked runs f over link's proxies with n's lock held; a link the cell did not declare (or a
// cell without links, n nil) is ErrNoLink.
func (n *netLinks) locked(link string, f func([]*toxiproxy.Proxy) error) error {
	if n == nil {
		return fmt.Errorf("%w: %s (the cell proxies nothing)", ErrNoLink, link)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	proxies, ok := n.proxies[link]
	if !ok {
		return fmt.Errorf("%w: %s", ErrNoLink, link)
	}
	return f(proxies)
}

// stop closes every proxy and its connections.
func (n *netLinks) stop() {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, ps := range n.proxies {
		for _, p := range ps {
			p.Stop()
		}
	}
}
