// Command qim runs the Q-IM server processes: `qim <service>` runs one service configured from
// QIM_* environment variables (`qim <service> --help` lists them), `qim all` runs every service
// in one process for demos. The commands are assembled in package services.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/qim-dev/qim/services"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := services.Execute(ctx)
	stop()
	os.Exit(code)
}
