package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services"
	"github.com/qim-dev/qim/services/authn/revocation"
)

// revokeOptions are the flags of `qimctl revoke`.
type revokeOptions struct {
	admin   string // the admin API's base URL; empty: the core Redis directly
	keyFile string // the admin API key
	redis   string // QIM_REDIS_ADDR
	tenant  string
	user    uint64
	device  string
	before  string // RFC 3339, or "now"
	lift    bool
}

func newRevokeCmd() *cobra.Command {
	opts := &revokeOptions{}
	cmd := &cobra.Command{
		Use:   "revoke",
		Short: "Refuse a user's or a device's credentials issued before a time, and end its live sessions",
		Long: `Stores a revocation in the core Redis and announces it to every gateway: credentials of the
user (or of one device) issued before --before are refused at AUTH ("credential revoked"), and
the live sessions they opened get KICKED LOGGED_OUT. A credential without an issue time (a dev
token, a JWT without iat) is covered by every revocation of its user or device. --lift removes
the revocation (live sessions are not affected). docs/identity.md#revocation.

Examples:
  QIM_REDIS_ADDR=127.0.0.1:6379 qimctl revoke --user 42 --device phone
  qimctl revoke --user 42 --before 2026-12-06T10:00:00Z     # every device
  qimctl revoke --user 42 --device phone --lift
  qimctl revoke --user 42 --admin http://10.0.0.9:7300 --admin-key-file ops.key   # audited`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRevoke(cmd.Context(), opts, os.Getenv, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.admin, "admin", "", "the admin API's base URL (http://host:port): revoke through it, audited, instead of writing the core Redis")
	f.StringVar(&opts.keyFile, "admin-key-file", "", "file holding the admin API key (with --admin)")
	f.StringVar(&opts.redis, "redis", "", "core Redis host:port without --admin (default $QIM_REDIS_ADDR)")
	f.StringVar(&opts.tenant, "tenant", "", "tenant id as 32 hex digits (default: tenant 0)")
	f.Uint64Var(&opts.user, "user", 0, "user id (required)")
	f.StringVar(&opts.device, "device", revocation.AllDevices, "device id (default: every device of the user)")
	f.StringVar(&opts.before, "before", "now", `refuse credentials issued before this time (RFC 3339, or "now")`)
	f.BoolVar(&opts.lift, "lift", false, "remove the revocation instead")
	return cmd
}

func runRevoke(ctx context.Context, o *revokeOptions, getenv func(string) string, out io.Writer) error {
	r, err := o.revocation()
	if err != nil {
		return err
	}
	if o.admin != "" {
		return revokeThroughAdmin(ctx, o, r, out)
	}
	addr := firstNonEmpty(o.redis, getenv("QIM_REDIS_ADDR"))
	if addr == "" {
		return fmt.Errorf("qimctl revoke: no core Redis: pass --redis or set QIM_REDIS_ADDR")
	}
	ropts := &redis.Options{Addr: addr}
	auth, err := services.StoreAuthFrom(getenv)
	if err == nil {
		err = auth.Redis.Apply(ropts)
	}
	if err != nil {
		return fmt.Errorf("qimctl revoke: %w", err)
	}
	rdb := redis.NewClient(ropts)
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if o.lift {
		if err := revocation.Lift(ctx, rdb, r); err != nil {
			return fmt.Errorf("qimctl revoke: %w", err)
		}
		fmt.Fprintf(out, "lifted the revocation of user %d device %q\n", r.User, r.Device)
		return nil
	}
	if err := revocation.Revoke(ctx, rdb, r); err != nil {
		return fmt.Errorf("qimctl revoke: %w", err)
	}
	fmt.Fprintf(out, "revoked credentials of user %d device %q issued before %s\n", r.User, r.Device, r.NotBefore.UTC().Format(time.RFC3339Nano))
	return nil
}

func (o *revokeOptions) revocation() (revocation.Revocation, error) {
	r := revocation.Revocation{User: contract.UserID(o.user), Device: o.device, NotBefore: time.Now()}
	if o.user == 0 {
		return r, fmt.Errorf("qimctl revoke: --user is required (user ids start at 1)")
	}
	if o.tenant != "" {
		t, err := contract.ParseU128(o.tenant)
		if err != nil {
			return r, fmt.Errorf("qimctl revoke: --tenant: %w", err)
		}
		r.Tenant = t
	}
	if o.before != "now" {
		t, err := time.Parse(time.RFC3339Nano, o.before)
		if err != nil {
			return r, fmt.Errorf("qimctl revoke: --before: %w", err)
		}
		r.NotBefore = t
	}
	return r, nil
}
