//go:build failpoints

package failpoint

import (
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
)

// Enabled reports whether this binary was built with failpoints.
const Enabled = true

var (
	armed   = os.Getenv("QIM_FAILPOINT")
	skip, _ = strconv.ParseInt(os.Getenv("QIM_FAILPOINT_SKIP"), 10, 64)
	hits    atomic.Int64
)

// Armed reports whether name is the failpoint selected by QIM_FAILPOINT.
func Armed(name string) bool { return armed != "" && armed == name }

// Hit SIGKILLs the process at the armed failpoint once QIM_FAILPOINT_SKIP earlier hits passed.
func Hit(name string) {
	if !Armed(name) {
		return
	}
	if hits.Add(1) <= skip {
		return
	}
	fmt.Fprintf(os.Stderr, "failpoint: %s hit, killing pid %d\n", name, os.Getpid())
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // never return into the durability path after the kill was requested
}
