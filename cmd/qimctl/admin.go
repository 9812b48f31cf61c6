package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/qim-dev/qim/services/admin"
	"github.com/qim-dev/qim/services/authn/revocation"
)

func newAdminCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "admin", Short: "The admin API: its keys, and its routes from the command line"}
	var id, scopes string
	key := &cobra.Command{
		Use:   "key",
		Short: "Make an admin API key and its entry for QIM_ADMIN_KEYS",
		Long: `Prints a new random API key on the first line and, on the second, its entry for the keys file
QIM_ADMIN_KEYS names (the file holds the key's SHA-256, never the key). Give the key to its
holder, add the entry to the file's "keys" list, restart the admin API.

Examples:
  qimctl admin key --id ops --scopes revocations
  qimctl admin key --id ci --scopes revocations,dev_tokens
  qimctl admin key --id backend --scopes sessions,groups
  qimctl admin key --id moderation --scopes rooms`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b := make([]byte, 32)
			if _, err := rand.Read(b); err != nil {
				return err
			}
			k := base64.RawURLEncoding.EncodeToString(b)
			list := strings.Split(scopes, ",")
			for _, sc := range list {
				if !slices.Contains(admin.Scopes(), sc) {
					return fmt.Errorf("qimctl admin key: unknown scope %q (want one of %s)", sc, strings.Join(admin.Scopes(), ", "))
				}
			}
			entry, _ := json.Marshal(map[string]any{"id": id, "sha256": admin.KeyDigest(k), "scopes": list})
			fmt.Fprintf(cmd.OutOrStdout(), "%s\n%s\n", k, entry)
			return nil
		},
	}
	key.Flags().StringVar(&id, "id", "", "the key's name in the audit log (required)")
	key.Flags().StringVar(&scopes, "scopes", "", "comma-separated scopes: "+strings.Join(admin.Scopes(), ", ")+" (required)")
	_ = key.MarkFlagRequired("id")
	_ = key.MarkFlagRequired("scopes")
	cmd.AddCommand(key)
	cmd.AddCommand(newAdminAPICmds()...)
	return cmd
}

// revokeThroughAdmin stores (or lifts) r through the admin API.
func revokeThroughAdmin(ctx context.Context, o *revokeOptions, r revocation.Revocation, out io.Writer) error {
	key, err := os.ReadFile(o.keyFile)
	if err != nil {
		return fmt.Errorf("qimctl revoke: --admin-key-file: %w", err)
	}
	body, _ := json.Marshal(admin.RevocationRequest{Tenant: o.tenant, User: uint64(r.User), Device: r.Device,
		NotBefore: r.NotBefore.UTC().Format(time.RFC3339Nano)})
	method := http.MethodPost
	if o.lift {
		method = http.MethodDelete
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(o.admin, "/")+"/v1/revocations", bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("qimctl revoke: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimRight(string(key), "\r\n"))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("qimctl revoke: %w", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("qimctl revoke: the admin API answered %s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	fmt.Fprintf(out, "%s user %d device %q through the admin API\n", map[bool]string{false: "revoked", true: "lifted"}[o.lift], r.User, r.Device)
	return nil
}
