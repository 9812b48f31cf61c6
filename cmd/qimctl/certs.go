package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/qim-dev/qim/services"
)

// certsDevOptions are the flags of `qimctl certs dev`.
type certsDevOptions struct {
	out        string
	instances  int
	oneProcess bool
	force      bool
	envDir     string
}

func newCertsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "certs",
		Short: "Certificates of the internal RPC boundary (mTLS with roles)",
	}
	cmd.AddCommand(newCertsDevCmd(&certsDevOptions{}))
	return cmd
}

func newCertsDevCmd(o *certsDevOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Write a development CA and one certificate per service and for qimctl's admin",
		Long: `Writes a fresh development CA and a certificate per service instance to --out: writer,
mailbox, session and gateway (numbered writer-1, writer-2, … with --instances above 1) and admin
(qimctl's GroupAdmin caller). Each service certificate carries the DNS name its callers verify
(<service>.qim.internal) and is both its server and its client certificate.

It also writes <name>.env per service certificate: the QIM_RPC_TLS_CA, QIM_RPC_TLS_CERT,
QIM_RPC_TLS_KEY and QIM_RPC_PEERS lines for that process. QIM_RPC_PEERS is the role whitelist,
role:sha256-of-the-certificate for every gateway, MailboxNode and admin certificate; the same
list goes to every service.

This is for development and tests: the CA key (ca.key) sits beside the certificates and the
certificates expire after 90 days. Production brings its own CA; only the fingerprints in
QIM_RPC_PEERS grant roles.

Example:
  qimctl certs dev --out ./certs
  set -a; . ./certs/writer.env; set +a; qim writer
  qimctl membership list --group 00ab --certs ./certs`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runCertsDev(o, cmd.OutOrStdout()) },
	}
	f := cmd.Flags()
	f.StringVar(&o.out, "out", "", "directory to write (created; required)")
	f.IntVar(&o.instances, "instances", 1, "instances of each service (1..64)")
	f.BoolVar(&o.oneProcess, "one-process", false, "also write all.pem and all.env for a qim all process (serves as every service, calls as gateway and mailbox)")
	f.StringVar(&o.envDir, "env-dir", "", "where the services will see --out (a container's mount point, say /certs): the .env files name the files under it (default: --out's absolute path)")
	f.BoolVar(&o.force, "force", false, "replace an existing set in --out (every service then needs the new files)")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}

func runCertsDev(o *certsDevOptions, out io.Writer) error {
	if o.instances < 1 || o.instances > 64 {
		return fmt.Errorf("qimctl: --instances %d not in [1, 64]", o.instances)
	}
	dir, err := filepath.Abs(o.out) // the .env files name the files wherever the service runs
	if err != nil {
		return fmt.Errorf("qimctl: --out: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ca.pem")); err == nil && !o.force {
		return fmt.Errorf("qimctl: %s already holds a CA (ca.pem); pass --force to replace it", o.out)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("qimctl: %w", err)
	}
	ids := services.DevIdentities(o.instances)
	if o.oneProcess {
		ids = append(ids, services.OneProcessIdentity("all"))
	}
	set, err := services.WriteDevCerts(dir, ids)
	if err != nil {
		return fmt.Errorf("qimctl: %w", err)
	}
	names := make([]string, 0, len(set.Certs))
	for name := range set.Certs {
		names = append(names, name)
	}
	sort.Strings(names)
	fmt.Fprintf(out, "CA: %s\n", set.CA)
	for _, name := range names {
		c := set.Certs[name]
		roles := make([]string, len(c.Roles))
		for i, r := range c.Roles {
			roles[i] = string(r)
		}
		fmt.Fprintf(out, "%-12s %s  roles: %-8s sha256 %s\n", name, c.CertFile, strings.Join(roles, ","), c.Fingerprint)
		if !c.IsProcess() {
			continue
		}
		env := strings.Join(set.EnvAt(name, o.envDir), "\n") + "\n"
		if err := os.WriteFile(filepath.Join(dir, name+".env"), []byte(env), 0o600); err != nil {
			return fmt.Errorf("qimctl: %w", err)
		}
	}
	fmt.Fprintf(out, "QIM_RPC_PEERS=%s\n", strings.Join(set.Peers, ","))
	return nil
}
