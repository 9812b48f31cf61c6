// Command qim-desktop is the interactive terminal client over the SDK: one account on one device,
// its local store at a stable path under --data-dir, and a line-oriented command set (/login, /msg,
// /history, /pending, /convs, the group commands /gcreate, /gmsg, /members, /leave, the room
// commands /join, /room, /rooms, /quit). It starts without touching the network; /login
// connects. It exits promptly on /quit, on end of input and when the device is replaced by a
// newer login (KICKED): the exit path closes the client (store flushed) and calls os.Exit,
// because a goroutine blocked reading stdin must never keep the process alive (the predecessor's
// desktop client hung after /quit for exactly that reason:
// docs/adr/0014-desktop-exits-with-os-exit.md).
package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/sdk"
	"github.com/qim-dev/qim/services"
	"github.com/qim-dev/qim/services/cmdline"
)

type options struct {
	gateway   string
	tls       bool
	tenant    string
	user      uint64
	device    string
	dataDir   string
	tokenFile string
}

func main() {
	os.Exit(execute(os.Args[1:]))
}

// execute runs the command and returns the process exit code.
func execute(args []string) int {
	code := 0
	cmd := newRootCmd(&options{}, &code)
	cmd.SetArgs(args)
	if err := cmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, cmdline.Line("qim-desktop", err))
		return cmdline.ExitCannot
	}
	return code
}

func newRootCmd(o *options, code *int) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "qim-desktop",
		Short: "Interactive terminal client for Q-IM",
		Long: `Runs one account on one device over the SDK. Nothing is sent to the network until /login.

The token is read from --token-file or the QIM_TOKEN environment variable (mint a development
token with 'qimctl token issue'); it is never printed. The local store lives under --data-dir at a
path derived from the gateway, tenant and user, so restarting keeps messages, cursor and pending
sends.

Commands: /login  /logout  /msg USER TEXT  /history USER [N]  /pending  /convs  /read USER  /help  /quit
Reads:    /read USER  /share-reads on|off  (off: nobody sees your reads, and you see nobody's)
Messages: /recall USER SEQ  /edit USER SEQ TEXT  /delete USER SEQ  /react USER SEQ KEY  /unreact USER SEQ KEY
Groups:   /gcreate NAME USER,USER...  /gmsg GROUP TEXT  /members GROUP  /receipts GROUP [SEQ]  /leave GROUP
          (GROUP: the 32-digit id, or the start of a group this device knows)
Rooms:    /join ROOM [FROM]  /room ROOM TEXT  /rooms  /leave ROOM
          (ROOM: the room id in hex, e.g. 2a; FROM: replay from this room_seq, 0 = all buffered;
          rooms are live only: never stored, rejoined after a reconnect, forgotten on exit)

Examples:
  QIM_TOKEN=$(qimctl token issue --user 1001 --device laptop) qim-desktop --user 1001 --device laptop
  qim-desktop --gateway 10.0.0.5:7000 --user 1002 --device desk --token-file ~/.qim/token`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := o.config()
			if err != nil {
				return err
			}
			*code = run(cfg, os.Stdin, os.Stdout)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.gateway, "gateway", "127.0.0.1:7000", "gateway address host:port")
	f.BoolVar(&o.tls, "tls", false, "connect with TLS 1.3")
	f.StringVar(&o.tenant, "tenant", "", "tenant id, 32 hex digits (default: tenant 0)")
	f.Uint64Var(&o.user, "user", 0, "your user id (required)")
	f.StringVar(&o.device, "device", "", "this device's id, 1..64 bytes (required; must match the token)")
	f.StringVar(&o.dataDir, "data-dir", "", "local store root (default: the user config dir + /qim-desktop)")
	f.StringVar(&o.tokenFile, "token-file", "", "file holding the token (default: $QIM_TOKEN)")
	_ = cmd.MarkFlagRequired("user")
	_ = cmd.MarkFlagRequired("device")
	cmdline.Setup(cmd, cmdline.RefuseUnknownEnv(services.CheckEnviron))
	return cmd
}

// config turns the flags into an SDK configuration.
func (o *options) config() (sdk.Config, error) {
	mode := contract.ModeTCP
	if o.tls {
		mode = contract.ModeTLS
	}
	var tenant contract.TenantID
	if o.tenant != "" {
		t, err := contract.ParseU128(o.tenant)
		if err != nil {
			return sdk.Config{}, fmt.Errorf("--tenant: %w", err)
		}
		tenant = t
	}
	dir := o.dataDir
	if dir == "" {
		base, err := os.UserConfigDir()
		if err != nil {
			return sdk.Config{}, fmt.Errorf("no --data-dir and no user config dir: %w", err)
		}
		dir = filepath.Join(base, "qim-desktop")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return sdk.Config{}, fmt.Errorf("--data-dir: %w", err)
	}
	tok := os.Getenv("QIM_TOKEN")
	if o.tokenFile != "" {
		b, err := os.ReadFile(o.tokenFile)
		if err != nil {
			return sdk.Config{}, fmt.Errorf("--token-file: %w", err)
		}
		tok = strings.TrimSpace(string(b))
	}
	if tok == "" {
		return sdk.Config{}, errors.New("no token: set QIM_TOKEN or pass --token-file")
	}
	return sdk.Config{DataDir: dir, Endpoint: contract.Endpoint{Address: o.gateway, Mode: mode}, Tenant: tenant,
		User: contract.UserID(o.user), Device: o.device, Token: sdk.StaticToken(tok), ClientVersion: "qim-desktop/1"}, nil
}
