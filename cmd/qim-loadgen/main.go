// Command qim-loadgen runs the open-model load generator against a running Q-IM gateway.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/qim-dev/qim/gates/harnessvars"
	"github.com/qim-dev/qim/loadgen/cli"
	"github.com/qim-dev/qim/services/cmdline"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	root := cli.NewRootCmd()
	// The load generator is the harness's: it knows the harness's variables too.
	cmdline.RefuseUnknownEnv(harnessvars.CheckEnviron)(root)
	code := cmdline.Execute(ctx, root, os.Stderr)
	stop()
	os.Exit(code)
}
