// Command qim-loadgen runs the open-model load generator against a running Q-IM gateway.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/qim-dev/qim/loadgen/cli"
	"github.com/qim-dev/qim/services/cmdline"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cmdline.Execute(ctx, cli.NewRootCmd(), os.Stderr)
	stop()
	os.Exit(code)
}
