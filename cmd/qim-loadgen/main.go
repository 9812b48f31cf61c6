// Command qim-loadgen runs the open-model load generator against a running Q-IM gateway.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/qim-dev/qim/loadgen/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := cli.NewRootCmd().ExecuteContext(ctx)
	stop()
	if err != nil {
		os.Exit(1)
	}
}
