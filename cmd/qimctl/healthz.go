package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/spf13/cobra"
)

// healthzOptions are the flags of `qimctl healthz`.
type healthzOptions struct {
	timeout time.Duration
}

func newHealthzCmd(o *healthzOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "healthz ADDR",
		Short: "Exit 0 when a service's /healthz answers 200 (a container health check without a shell)",
		Long: `GETs http://ADDR/healthz and exits 0 on 200, 1 otherwise, printing the answer. The Q-IM image has
no shell or curl, so its containers' health checks run this.

Example:
  qimctl healthz 127.0.0.1:9100`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runHealthz(cmd.Context(), args[0], o.timeout, cmd.OutOrStdout())
		},
	}
	cmd.Flags().DurationVar(&o.timeout, "timeout", 3*time.Second, "give up after this long")
	return cmd
}

func runHealthz(ctx context.Context, addr string, timeout time.Duration, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/healthz", nil)
	if err != nil {
		return fmt.Errorf("qimctl healthz: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("qimctl healthz: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096)) // only printed
	fmt.Fprintf(out, "%s %s", resp.Status, body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("qimctl healthz: %s answered %s", addr, resp.Status)
	}
	return nil
}
