// Command qim-gate runs Q-IM's release gates and manages isolated real server stacks.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/qim-dev/qim/gates/cli"
	"github.com/qim-dev/qim/services/cmdline"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cmdline.Execute(ctx, cli.NewRootCmd(), os.Stderr)
	stop()
	os.Exit(code)
}
