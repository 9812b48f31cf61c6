//go:build failpoints

package failpoint

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

// Enabled reports whether this binary was built with failpoints.
const Enabled = true

var (
	armed   = os.Getenv("QIM_FAILPOINT")
	skip, _ = strconv.ParseInt(os.Getenv("QIM_FAILPOINT_SKIP"), 10, 64)
	hits    atomic.Int64
	// live is false while an armed failpoint waits for SIGUSR1 (QIM_FAILPOINT_ARM=signal): the
	// chaos matrix starts a service armed but dormant and fires it mid-load, so the crash lands
	// in a running pipeline at a moment the harness chose, not after a guessed number of hits.
	live atomic.Bool
	// action is what a live hit does: "" or "kill" SIGKILLs (a crash), "term" SIGTERMs once and
	// returns into the path (a graceful stop that begins in the middle of a batch).
	action = os.Getenv("QIM_FAILPOINT_ACTION")
	termed atomic.Bool
)

func init() {
	if armed == "" || os.Getenv("QIM_FAILPOINT_ARM") != "signal" {
		live.Store(true)
		return
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGUSR1)
	go func() {
		<-ch
		signal.Stop(ch)
		live.Store(true)
		fmt.Fprintf(os.Stderr, "failpoint: %s made live by SIGUSR1\n", armed)
	}()
}

// Armed reports whether name is the failpoint selected by QIM_FAILPOINT (live or dormant:
// code that takes a different path to make the failpoint reachable takes it from the start).
func Armed(name string) bool { return armed != "" && armed == name }

// Hit SIGKILLs the process at the armed failpoint once it is live and QIM_FAILPOINT_SKIP
// earlier live hits passed; with QIM_FAILPOINT_ACTION=term it starts a graceful stop instead.
func Hit(name string) {
	if !Armed(name) || !live.Load() {
		return
	}
	if hits.Add(1) <= skip {
		return
	}
	if action == "term" {
		term(name)
		return
	}
	fmt.Fprintf(os.Stderr, "failpoint: %s hit, killing pid %d\n", name, os.Getpid())
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // never return into the durability path after the kill was requested
}

// term SIGTERMs the process once and returns when the runtime has delivered the signal (to the
// service's own handler as well as to this one), so the rest of the batch that hit the
// failpoint runs while the service is already stopping: the stop lands mid-batch, not after it.
// The wait is bounded: a signal never delivered must not hang the path.
func term(name string) {
	if !termed.CompareAndSwap(false, true) {
		return
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM)
	defer signal.Stop(ch)
	fmt.Fprintf(os.Stderr, "failpoint: %s hit, sending SIGTERM to pid %d mid-batch\n", name, os.Getpid())
	_ = syscall.Kill(os.Getpid(), syscall.SIGTERM)
	select {
	case <-ch:
	case <-time.After(termDelivered):
	}
}

// termDelivered bounds term's wait for its own signal.
const termDelivered = 5 * time.Second
