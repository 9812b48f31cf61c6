package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/contract/devtoken"
	"github.com/qim-dev/qim/gates/stack"
	"github.com/qim-dev/qim/gates/svc"
	"github.com/qim-dev/qim/loadgen"
	"github.com/qim-dev/qim/sdk"
)

type demoOptions struct {
	root     string
	rate     float64
	duration time.Duration
	out      string
}

func newDemoCmd() *cobra.Command {
	o := &demoOptions{}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Bring up a stack and every service, show two SDK clients talking, run a short load",
		Long: `For a newcomer: starts Redis and Kafka (child processes), builds and starts every Q-IM service,
has two SDK clients exchange messages, runs a short open-model load and writes its HTML report,
then prints how to connect qim-desktop to the running system and waits. Ctrl-C tears it all down.

Example:
  make demo            # installs what it needs first
  qim-gate demo --rate 200 --duration 30s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context(), cmd.OutOrStdout()) },
	}
	cmd.Flags().StringVar(&o.root, "root", ".", "repository root to build qim from")
	cmd.Flags().Float64Var(&o.rate, "rate", 200, "load rate, msg/s")
	cmd.Flags().DurationVar(&o.duration, "duration", 30*time.Second, "load duration")
	cmd.Flags().StringVar(&o.out, "out", "out/demo", "directory the load report is written to")
	return cmd
}

func (o *demoOptions) run(ctx context.Context, w io.Writer) (err error) {
	st := stack.NewProcess(stack.WithProgress(os.Stderr))
	defer func() {
		if derr := st.Down(context.Background()); derr != nil && err == nil {
			err = derr
		}
	}()
	if err := st.Up(ctx); err != nil {
		return err
	}
	fmt.Fprintln(w, "== building and starting the services")
	set, err := startServices(ctx, o.root, st.Endpoints())
	if err != nil {
		return err
	}
	defer func() { _ = set.Close() }()
	if err := o.converse(ctx, w, set); err != nil {
		return err
	}
	report, err := o.load(ctx, w, set)
	if err != nil {
		return err
	}
	o.explain(w, set, report)
	<-ctx.Done()
	fmt.Fprintln(w, "\n== tearing down")
	return nil
}

func startServices(ctx context.Context, root string, ep stack.Endpoints) (*svc.Set, error) {
	bin, err := svc.Build(ctx, root, ep.Dir)
	if err != nil {
		return nil, err
	}
	set, err := svc.New(bin, ep)
	if err != nil {
		return nil, err
	}
	if err := set.StartAll(ctx); err != nil {
		_ = set.Close()
		return nil, err
	}
	return set, nil
}

// converse has alice and bob, two SDK clients with their own local stores, exchange messages.
func (o *demoOptions) converse(ctx context.Context, w io.Writer, set *svc.Set) error {
	fmt.Fprintln(w, "== two SDK clients exchange messages")
	dir, err := os.MkdirTemp("", "qim-demo-sdk-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	alice, err := demoClient(set, dir, 1001, "alice-laptop")
	if err != nil {
		return err
	}
	defer alice.Close()
	bob, err := demoClient(set, dir, 1002, "bob-phone")
	if err != nil {
		return err
	}
	defer bob.Close()
	for _, c := range []*sdk.Client{alice, bob} {
		if err := c.Connect(ctx); err != nil {
			return err
		}
	}
	for i, line := range []string{"hi bob, this went through writer → Outbox → fanout → mailbox", "and it is in your local SQLite store now"} {
		if _, err := alice.Send(ctx, 1002, []byte(line), sdk.SendOptions{}); err != nil {
			return err
		}
		if err := awaitMessage(ctx, bob, line); err != nil {
			return fmt.Errorf("demo: message %d did not arrive: %w", i, err)
		}
		fmt.Fprintf(w, "   alice → bob: %q (delivered)\n", line)
	}
	if _, err := bob.Send(ctx, 1001, []byte("got both, thanks"), sdk.SendOptions{}); err != nil {
		return err
	}
	if err := awaitMessage(ctx, alice, "got both, thanks"); err != nil {
		return err
	}
	fmt.Fprintln(w, `   bob → alice: "got both, thanks" (delivered)`)
	return nil
}

func demoClient(set *svc.Set, dir string, user contract.UserID, device string) (*sdk.Client, error) {
	tok, err := devtoken.Issue([]byte(set.Addrs.TokenSecret), devtoken.Claims{User: user, Device: device,
		ExpiresAtMs: time.Now().Add(24 * time.Hour).UnixMilli()})
	if err != nil {
		return nil, err
	}
	return sdk.Open(sdk.Config{DataDir: filepath.Join(dir, device), User: user, Device: device,
		Endpoint: contract.Endpoint{Address: set.Addrs.GatewayTCP, Mode: contract.ModeTCP}, Token: sdk.StaticToken(tok)})
}

// awaitMessage waits for a MessagesAdded event carrying body.
func awaitMessage(ctx context.Context, c *sdk.Client, body string) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for {
		select {
		case ev := <-c.Events():
			if m, ok := ev.(sdk.MessagesAdded); ok {
				for _, msg := range m.Messages {
					if string(msg.Body) == body {
						return nil
					}
				}
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// load runs the open-model load generator for a short, modest run and writes its report.
func (o *demoOptions) load(ctx context.Context, w io.Writer, set *svc.Set) (string, error) {
	fmt.Fprintf(w, "== load: %.0f msg/s for %s (open model, 1:1 pairs)\n", o.rate, o.duration)
	rep, err := loadgen.Run(ctx, loadgen.Config{Gateway: set.Addrs.GatewayTCP, TokenSecret: []byte(set.Addrs.TokenSecret),
		Rate: o.rate, Duration: o.duration, Connections: 100, Progress: w, Label: "demo"})
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(o.out, "load.html")
	if err := os.WriteFile(path, loadgen.RenderHTML(rep), 0o644); err != nil {
		return "", err
	}
	abs, _ := filepath.Abs(path)
	return abs, nil
}

func (o *demoOptions) explain(w io.Writer, set *svc.Set, report string) {
	fmt.Fprintf(w, `
== the system is running
   load report:  %s
   connect the terminal client (another shell, from the repository):
     go build -o bin/ ./cmd/qim-desktop ./cmd/qimctl
     export QIM_TOKEN_SECRET=%s
     QIM_TOKEN=$(bin/qimctl token issue --user 1001 --device laptop) \
       bin/qim-desktop --gateway %s --user 1001 --device laptop --data-dir /tmp/qim-desktop
     then: /login, /msg 1002 hello, /history 1002, /convs, /quit
   Ctrl-C here stops every service and the stack.
`, report, set.Addrs.TokenSecret, set.Addrs.GatewayTCP)
}
