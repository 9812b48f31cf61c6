// Command qim-lint runs Q-IM's contract lint (gates/lint) over a checkout. main only wires the
// command to the process: exit 0 when every check passed, 1 on any finding, 2 when the lint could
// not run at all.
package main

import (
	"context"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
