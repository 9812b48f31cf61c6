// Command devdeploy starts a throwaway Q-IM deployment to try qim-desktop against (and the one
// scripts/desktop-tmux.sh uses): a process stack (Redis, Kafka) in a fresh qim-it-* directory and
// every qim service built from this checkout (gates/svc), each on free loopback ports. Once all are
// healthy it writes QIM_GATEWAY and QIM_TOKEN_SECRET lines to --env-file; on SIGINT/SIGTERM it
// stops the services and the stack and removes the project directory. It is a development tool:
// the token secret it writes is a throwaway, and nothing listens beyond loopback.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/qim-dev/qim/gates/stack"
	"github.com/qim-dev/qim/gates/svc"
)

func main() {
	envFile := flag.String("env-file", "", "write QIM_GATEWAY and QIM_TOKEN_SECRET here once ready (required)")
	root := flag.String("root", ".", "repository root to build the qim binary from")
	flag.Parse()
	if *envFile == "" {
		fmt.Fprintln(os.Stderr, "devdeploy: --env-file is required")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *envFile, *root); err != nil {
		fmt.Fprintln(os.Stderr, "devdeploy:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, envFile, root string) (err error) {
	st := stack.NewProcess(stack.WithProgress(os.Stderr))
	defer func() {
		down, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		err = errors.Join(err, st.Down(down))
	}()
	if err := st.Up(ctx); err != nil {
		return err
	}
	binDir, err := os.MkdirTemp("", "qim-devdeploy-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(binDir)
	bin, err := svc.Build(ctx, root, binDir)
	if err != nil {
		return err
	}
	set, err := svc.New(bin, st.Endpoints())
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, set.StopAll()) }()
	if err := set.StartAll(ctx); err != nil {
		return err
	}
	if err := writeEnv(envFile, set); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "devdeploy: ready, gateway %s; stop with SIGTERM\n", set.Addrs.GatewayTCP)
	<-ctx.Done()
	return nil
}

// writeEnv writes the file atomically (rename), so a reader never sees half of it.
func writeEnv(path string, set *svc.Set) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	content := fmt.Sprintf("QIM_GATEWAY=%s\nQIM_TOKEN_SECRET=%s\n", set.Addrs.GatewayTCP, set.Addrs.TokenSecret)
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
