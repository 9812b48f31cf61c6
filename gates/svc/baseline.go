package svc

import (
	"context"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// A/B baselines are binaries built from older commits. They read the single-address backend
// variables the current services refuse as retired (ADR-0026), so the harness gives each binary
// the names it knows; this file is the only place those names may appear (services_test).

var listAddrsProbe sync.Map // binary path → bool

// knowsAddrLists reports whether bin's gateway reads QIM_WRITER_ADDRS (its help lists every
// variable).
func knowsAddrLists(bin string) bool {
	if v, ok := listAddrsProbe.Load(bin); ok {
		return v.(bool)
	}
	// Bounded: a test's stand-in binary may ignore --help and sleep.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "gateway", "--help")
	cmd.WaitDelay = time.Second
	out, _ := cmd.CombinedOutput()
	known := strings.Contains(string(out), "QIM_WRITER_ADDRS")
	listAddrsProbe.Store(bin, known)
	return known
}

// backendAddrEnv is how the gateway finds the writer, MailboxNode and SessionProjection.
func (s *Set) backendAddrEnv() []string {
	a := s.Addrs
	if knowsAddrLists(s.bin) {
		return []string{"QIM_WRITER_ADDRS=" + a.Writer, "QIM_MAILBOX_ADDRS=" + a.Mailbox, "QIM_SESSION_ADDRS=" + a.Session}
	}
	return []string{"QIM_WRITER_ADDR=" + a.Writer, "QIM_MAILBOX_ADDR=" + a.Mailbox, "QIM_SESSION_ADDR=" + a.Session}
}
