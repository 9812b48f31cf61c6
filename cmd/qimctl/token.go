package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/contract/devtoken"
)

// tokenIssueOptions are the flags of `qimctl token issue`.
type tokenIssueOptions struct {
	user       uint64
	device     string
	tenant     string // 32 hex digits; empty = tenant 0 (the single-tenant deployment)
	ttl        time.Duration
	secretFile string // overrides QIM_TOKEN_SECRET
}

func newTokenCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Development tokens for the gateway's AUTH",
	}
	cmd.AddCommand(newTokenIssueCmd(&tokenIssueOptions{}))
	return cmd
}

func newTokenIssueCmd(opts *tokenIssueOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "issue",
		Short: "Mint a signed dev token for one user and device",
		Long: `Mints a development token (contract/devtoken format) that the gateway accepts at AUTH.

The signing secret is read from QIM_TOKEN_SECRET, or from --secret-file (trailing newlines
stripped); it must be at least 16 bytes and the same value the gateway runs with. The token is
printed to stdout and nothing else is: the secret and the token never go to stderr or a log.
A token is a bearer credential; treat it like a password.

Examples:
  QIM_TOKEN_SECRET=dev-secret-0123456789 qimctl token issue --user 42 --device phone-1
  qimctl token issue --user 42 --device web --tenant 000000000000000000000000000000ab --ttl 1h \
      --secret-file /etc/qim/token-secret`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			token, err := issueToken(opts, time.Now())
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), token)
			return err
		},
	}
	f := cmd.Flags()
	f.Uint64Var(&opts.user, "user", 0, "user id (required, non-zero)")
	f.StringVar(&opts.device, "device", "", "device id, 1..64 bytes (required)")
	f.StringVar(&opts.tenant, "tenant", "", "tenant id as 32 hex digits (default: tenant 0)")
	f.DurationVar(&opts.ttl, "ttl", 24*time.Hour, "token lifetime")
	f.StringVar(&opts.secretFile, "secret-file", "", "read the signing secret from this file instead of QIM_TOKEN_SECRET")
	_ = cmd.MarkFlagRequired("user")
	_ = cmd.MarkFlagRequired("device")
	return cmd
}

// issueToken validates the options and signs the token.
func issueToken(opts *tokenIssueOptions, now time.Time) (string, error) {
	if opts.ttl <= 0 {
		return "", fmt.Errorf("qimctl: --ttl must be positive (got %v)", opts.ttl)
	}
	var tenant contract.TenantID
	if opts.tenant != "" {
		t, err := contract.ParseU128(opts.tenant)
		if err != nil {
			return "", fmt.Errorf("qimctl: --tenant: %w", err)
		}
		tenant = t
	}
	secret, err := readSecret(opts.secretFile)
	if err != nil {
		return "", err
	}
	token, err := devtoken.Issue(secret, devtoken.Claims{Tenant: tenant, User: contract.UserID(opts.user),
		Device: opts.device, ExpiresAtMs: now.Add(opts.ttl).UnixMilli()})
	if err != nil {
		return "", fmt.Errorf("qimctl: issue token: %w", err)
	}
	return token, nil
}

func readSecret(path string) ([]byte, error) {
	secret, err := devtoken.ReadSecret(path, os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("qimctl: %w", err)
	}
	return secret, nil
}
