package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/spf13/cobra"

	"github.com/qim-dev/qim/services/cmdline"
)

// healthzOptions are the flags of `qimctl healthz`.
type healthzOptions struct {
	timeout time.Duration
}

func newHealthzCmd(o *healthzOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "healthz ADDR|URL",
		Short: "Exit 0 when a service's /healthz answers 200 (a container health check without a shell)",
		Long: `GETs http://ADDR/healthz (or the URL given; one without a path gets /healthz) and prints the
answer. Exit status 0 on 200, 1 on any other answer, 2 when the service could not be reached. The
Q-IM image has no shell or curl, so its containers' health checks run this.

Examples:
  qimctl healthz 127.0.0.1:9100
  qimctl healthz http://10.0.0.5:9100/healthz`,
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
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, healthzURL(addr), nil)
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
		return cmdline.Failure(fmt.Errorf("qimctl healthz: %s answered %s", addr, resp.Status))
	}
	return nil
}

// healthzURL is the URL of arg: host:port gets http:// and /healthz, a URL without a path
// /healthz.
func healthzURL(arg string) string {
	u, err := url.Parse(arg)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "http://" + arg + "/healthz"
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/healthz"
	}
	return u.String()
}
