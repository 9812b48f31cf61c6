package chaos

import (
	"context"
	"time"

	"github.com/qim-dev/qim/gates/svc"
)

// The network cells (issue 42, item 1): one link of the deployment is shaped through its proxy
// (netproxy.go) while everything else is reachable. Judged like every cell: a send either
// commits exactly once or fails visibly, nothing acknowledged is lost, and nothing stalls after
// the heal (the checker's STALL, from the heal on).
//
// Links: gateway→writer (the SEND RPC), writer→redis-core (every commit step),
// mailbox→redis-mailbox (materialization). Not yet: fanout→broker (the broker advertises its own
// address, so a client leaves a bootstrap proxy after the first metadata answer; it needs a
// second listener advertising the proxy), archiver→CQL (the driver also learns the node's
// address from system.local) and gateway↔gateway presence.

// Shapes of the faults: the added latency of one direction, how long a connection lives before
// it is cut, and how long each fault lasts.
const (
	netLatency    = 200  // ms, on what the process receives: +200 ms to every round trip
	netJitter     = 50   // ms
	netCutAfter   = 2000 // ms
	netShortHold  = 20 * time.Second
	netOutageHold = 30 * time.Second
	// netSettle is the load window after the heal, in which the checker sees recovery.
	netSettle = 30 * time.Second
)

// netLink is one link the cells shape; slug names it in cell names.
type netLink struct {
	slug string
	Link
}

// netShape is one fault class on a link.
type netShape struct {
	slug, title string
	hold        time.Duration
	toxics      []toxic
}

func netLinksShaped() []netLink {
	return []netLink{
		{"gateway-writer", Link{Name: "gateway→writer", Process: svc.Gateway, Var: "QIM_WRITER_ADDRS"}},
		{"writer-redis-core", Link{Name: "writer→redis-core", Process: svc.Writer, Var: "QIM_REDIS_ADDR"}},
		{"mailbox-redis-mailbox", Link{Name: "mailbox→redis-mailbox", Process: svc.Mailbox, Var: "QIM_MAILBOX_REDIS_ADDR"}},
	}
}

func netShapes() []netShape {
	return []netShape{
		{slug: "latency", title: "200 ± 50 ms added to every answer for 20 s", hold: netShortHold,
			toxics: []toxic{{Name: "latency", Type: "latency", Stream: "downstream",
				Attributes: map[string]any{"latency": netLatency, "jitter": netJitter}}}},
		{slug: "blackhole", title: "blackholed both ways for 30 s (connections stay open, nothing passes), then healed",
			hold: netOutageHold, toxics: []toxic{
				{Name: "blackhole-up", Type: "timeout", Stream: "upstream", Attributes: map[string]any{"timeout": 0}},
				{Name: "blackhole-down", Type: "timeout", Stream: "downstream", Attributes: map[string]any{"timeout": 0}}}},
		{slug: "cuts", title: "every connection cut 2 s after it opened, for 20 s (bytes in flight dropped)", hold: netShortHold,
			toxics: []toxic{{Name: "cuts", Type: "qim_cut", Stream: "upstream",
				Attributes: map[string]any{"timeout": netCutAfter}}}},
		{slug: "half-open", title: "half-open for 30 s: what the process sends is swallowed, no FIN or RST, answers stop",
			hold: netOutageHold, toxics: []toxic{{Name: "half-open", Type: "timeout", Stream: "upstream",
				Attributes: map[string]any{"timeout": 0}}}},
	}
}

// shapeToxics are the toxics of the shape named slug (a name no shape has is a programming
// error, caught by every test that lists the cells).
func shapeToxics(slug string) []toxic {
	for _, s := range netShapes() {
		if s.slug == slug {
			return s.toxics
		}
	}
	panic("chaos: no network shape " + slug)
}

// netRelease are the network cells the release run (`make test`) runs, one per fault class
// across the links; the others run with `--cells nightly` or by name.
var netRelease = map[string]bool{
	"net-writer-redis-core-blackhole":     true,
	"net-gateway-writer-cuts":             true,
	"net-mailbox-redis-mailbox-half-open": true,
	"net-writer-redis-core-latency":       true,
}

func networkCells() []Cell {
	var cells []Cell
	for _, l := range netLinksShaped() {
		for _, s := range netShapes() {
			name := "net-" + l.slug + "-" + s.slug
			cells = append(cells, Cell{Name: name, Title: l.Name + ": " + s.title, Class: s.slug,
				Nightly: !netRelease[name], Links: []Link{l.Link},
				Fault: shapeLink(l.Name, s.toxics...), Hold: s.hold, Heal: unshapeLink(l.Name),
				Window: s.hold + netSettle})
		}
	}
	return append(cells, sdkDropsCell(), writerPartitionCell())
}

// shapeLink puts toxics on a link.
func shapeLink(link string, toxics ...toxic) Fault {
	return func(_ context.Context, t *Target) (time.Time, error) {
		if err := t.Net.add(link, toxics...); err != nil {
			return time.Time{}, err
		}
		return time.Now(), nil
	}
}

// unshapeLink removes every toxic of a link.
func unshapeLink(link string) Heal {
	return func(ctx context.Context, t *Target) error {
		return t.Net.clear(ctx, link)
	}
}

// linkClients is the link of a ClientLink cell: the load's connections to the gateway.
const linkClients = "clients→gateway"

// sdkDropsHold is how long the clients' connections keep being cut: about fifteen cuts of each.
const sdkDropsHold = 30 * time.Second

// sdkDropsCell (issue 42, item 7): half the connections are SDK clients, and every client
// connection is cut 2 s after it opened, again and again for 30 s, so SDK sends are pending
// across each drop. The SDK must resolve every one of them for its app, Committed once or
// Failed (the checker's UNRESOLVED finds a send it never resolved), and the frame lane's
// clients reconnect and reconcile as after any drop.
func sdkDropsCell() Cell {
	cuts := shapeToxics("cuts")
	return Cell{Name: "net-client-connections-cut", Class: "cuts",
		Title:      "clients→gateway: every client connection cut 2 s after it opened, for 30 s, half of them SDK clients with sends pending",
		ClientLink: true, SDKPercent: 50,
		Fault: shapeLink(linkClients, cuts...), Hold: sdkDropsHold, Heal: unshapeLink(linkClients),
		Window: sdkDropsHold + netSettle}
}
