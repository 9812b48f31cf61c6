package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services"
)

// membershipOptions are the flags of the `qimctl membership` subcommands. The writer address
// falls back to the variables the services read (the first of the gateway's QIM_WRITER_ADDRS, then the
// writer's own QIM_WRITER_LISTEN), so an operator's service environment is enough.
type membershipOptions struct {
	writer    string
	tenant    string
	group     string
	owner     uint64
	users     string
	name      string
	requestID string
	timeout   time.Duration
	certs     string // directory of qimctl certs dev: ca.pem, admin.pem, admin.key
	ca        string
	cert      string
	key       string
}

func newMembershipCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "membership",
		Short: "Administer groups through the writer's GroupAdmin RPC",
		Long: `Creates groups and changes or lists their members as an administrator. Every change is the
same CONTROL commit as a client's: members see it in the group conversation, with actor 0 and
the group's owner as sender.

The writer's gRPC address is --writer, else the first of $QIM_WRITER_ADDRS (what the gateway dials; any writer serves GroupAdmin), else
$QIM_WRITER_LISTEN. GroupAdmin needs the admin role of the internal RPC boundary, even on loopback:
qimctl calls with an admin certificate (--certs DIR from qimctl certs dev, or --ca, --cert and
--key) whose SHA-256 fingerprint the writer lists as admin:<fingerprint> in QIM_RPC_PEERS.
--ca defaults to $QIM_RPC_TLS_CA.`,
	}
	cmd.AddCommand(newMembershipCreateCmd(&membershipOptions{}), newMembershipChangeCmd(&membershipOptions{}, contract.AdminGroupAdd),
		newMembershipChangeCmd(&membershipOptions{}, contract.AdminGroupRemove), newMembershipListCmd(&membershipOptions{}))
	return cmd
}

// commonFlags binds the flags every subcommand has.
func (o *membershipOptions) commonFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.writer, "writer", "", "writer gRPC address host:port (default the first of $QIM_WRITER_ADDRS, else $QIM_WRITER_LISTEN)")
	f.StringVar(&o.tenant, "tenant", "", "tenant id in hex, up to 32 digits (default: tenant 0)")
	f.DurationVar(&o.timeout, "timeout", 10*time.Second, "longest wait for the writer's answer")
	f.StringVar(&o.certs, "certs", "", "directory holding ca.pem, admin.pem and admin.key (qimctl certs dev --out)")
	f.StringVar(&o.ca, "ca", "", "internal CA certificate (default $QIM_RPC_TLS_CA, or DIR/ca.pem with --certs)")
	f.StringVar(&o.cert, "cert", "", "admin certificate (or DIR/admin.pem with --certs)")
	f.StringVar(&o.key, "key", "", "admin certificate's key (or DIR/admin.key with --certs)")
}

// adminFiles resolves the admin credential's files: explicit flags first, then --certs DIR,
// then $QIM_RPC_TLS_CA for the CA. There is no plaintext fallback: the writer refuses it.
func (o *membershipOptions) adminFiles(getenv func(string) string) (ca, cert, key string, err error) {
	fromDir := func(name string) string {
		if o.certs == "" {
			return ""
		}
		return filepath.Join(o.certs, name)
	}
	ca = firstNonEmpty(o.ca, firstNonEmpty(fromDir("ca.pem"), getenv("QIM_RPC_TLS_CA")))
	cert, key = firstNonEmpty(o.cert, fromDir("admin.pem")), firstNonEmpty(o.key, fromDir("admin.key"))
	if ca == "" || cert == "" || key == "" {
		return "", "", "", errors.New("qimctl: GroupAdmin needs an admin certificate, even on loopback: pass --certs DIR " +
			"(written by qimctl certs dev) or --ca, --cert and --key")
	}
	return ca, cert, key, nil
}

func newMembershipCreateCmd(o *membershipOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create a group owned by --owner",
		Long: `Creates a group and its conversation with --owner as its creator of record and --users as the
other initial members. The request carries an idempotency key (--request-id, 32 hex digits;
random when omitted, and printed): repeating the command with the same --request-id returns the
group the first attempt created instead of a second one, so a create whose answer was lost can
be retried safely. More than 1,000 members in all is refused with GROUP_FULL.

Examples:
  qimctl membership create --owner 1001 --users 1002,1003 --name "release team"
  qimctl membership create --writer 127.0.0.1:7101 --owner 1001 --users 1002 --name ops \
      --request-id 0000000000000000000000000000002a`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runMembership(cmd.Context(), o, contract.AdminGroupCreate, os.Getenv, cmd.OutOrStdout())
		},
	}
	o.commonFlags(cmd)
	f := cmd.Flags()
	f.Uint64Var(&o.owner, "owner", 0, "owner user id (required)")
	f.StringVar(&o.users, "users", "", "initial members besides the owner: user ids, comma-separated")
	f.StringVar(&o.name, "name", "", "display name (required)")
	f.StringVar(&o.requestID, "request-id", "", "idempotency key, 32 hex digits (default: random, printed)")
	_ = cmd.MarkFlagRequired("owner")
	_ = cmd.MarkFlagRequired("name")
	return cmd
}

func newMembershipChangeCmd(o *membershipOptions, op contract.AdminGroupOp) *cobra.Command {
	verb, short := "add", "Add users to a group"
	if op == contract.AdminGroupRemove {
		verb, short = "remove", "Remove users from a group"
	}
	cmd := &cobra.Command{
		Use:   verb,
		Short: short,
		Long: short + ` (one CONTROL message for all of them). Users already in (for add) or
already out (for remove) are left alone; when nothing changes, no message is written.

Examples:
  qimctl membership ` + verb + ` --group 2f4c0e9a1b7d3c5e8f6a2b4c6d8e0f1a --users 1004,1005`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runMembership(cmd.Context(), o, op, os.Getenv, cmd.OutOrStdout())
		},
	}
	o.commonFlags(cmd)
	cmd.Flags().StringVar(&o.group, "group", "", "group id in hex, up to 32 digits (required)")
	cmd.Flags().StringVar(&o.users, "users", "", "user ids, comma-separated (required)")
	_ = cmd.MarkFlagRequired("group")
	_ = cmd.MarkFlagRequired("users")
	return cmd
}

func newMembershipListCmd(o *membershipOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List a group's current members",
		Long: `Lists a group's current members with their membership interval: a member sees the group's
messages with joined_at < seq (and seq <= left_at once it has left; "-" while it is a member).

Examples:
  qimctl membership list --group 2f4c0e9a1b7d3c5e8f6a2b4c6d8e0f1a`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runMembership(cmd.Context(), o, contract.AdminGroupList, os.Getenv, cmd.OutOrStdout())
		},
	}
	o.commonFlags(cmd)
	cmd.Flags().StringVar(&o.group, "group", "", "group id in hex, up to 32 digits (required)")
	_ = cmd.MarkFlagRequired("group")
	return cmd
}

// runMembership resolves the options, calls AdminGroup and prints its outcome.
func runMembership(ctx context.Context, o *membershipOptions, op contract.AdminGroupOp, getenv func(string) string, out io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	addr, req, err := o.request(op, getenv)
	if err != nil {
		return err
	}
	ca, cert, key, err := o.adminFiles(getenv)
	if err != nil {
		return err
	}
	creds, err := services.AdminDialOption(ca, cert, key)
	if err != nil {
		return fmt.Errorf("qimctl: %w", err)
	}
	res, err := adminGroup(ctx, addr, creds, req, o.timeout)
	if err != nil {
		return err
	}
	if res.GetErrorCode() != 0 {
		return refusal(res)
	}
	return writeOutcome(out, op, req, res)
}

// request validates the options and builds the RPC request before any I/O.
func (o *membershipOptions) request(op contract.AdminGroupOp, getenv func(string) string) (string, *internalv1.AdminGroupRequest, error) {
	addr := firstNonEmpty(o.writer, firstNonEmpty(firstAddr(getenv("QIM_WRITER_ADDRS")), getenv("QIM_WRITER_LISTEN")))
	if addr == "" {
		return "", nil, errors.New("qimctl: no writer address: pass --writer host:port or set QIM_WRITER_ADDRS")
	}
	if o.timeout <= 0 {
		return "", nil, fmt.Errorf("qimctl: --timeout must be positive (got %v)", o.timeout)
	}
	req := &internalv1.AdminGroupRequest{Op: uint32(op)}
	tenant, err := parseHex128(o.tenant, true)
	if err != nil {
		return "", nil, fmt.Errorf("qimctl: --tenant: %w", err)
	}
	req.TenantId = tenant.AppendBytes(nil)
	users, err := parseUsers(o.users)
	if err != nil {
		return "", nil, fmt.Errorf("qimctl: --users: %w", err)
	}
	req.UserIds = users
	if op == contract.AdminGroupCreate {
		return addr, req, o.createFields(req)
	}
	g, err := parseHex128(o.group, false)
	if err != nil {
		return "", nil, fmt.Errorf("qimctl: --group: %w", err)
	}
	req.GroupId = g.AppendBytes(nil)
	if (op == contract.AdminGroupAdd || op == contract.AdminGroupRemove) && len(users) == 0 {
		return "", nil, errors.New("qimctl: --users: name at least one user")
	}
	return addr, req, nil
}

// createFields fills the CREATE-only fields: owner, name and the idempotency key.
func (o *membershipOptions) createFields(req *internalv1.AdminGroupRequest) error {
	if o.owner == 0 {
		return errors.New("qimctl: --owner must be a non-zero user id")
	}
	if o.name == "" {
		return errors.New("qimctl: --name must not be empty")
	}
	if len(req.UserIds)+1 > contract.GroupMaxMembers {
		return fmt.Errorf("qimctl: %d members with the owner, a group holds at most %d", len(req.UserIds)+1, contract.GroupMaxMembers)
	}
	crid, err := o.requestKey()
	if err != nil {
		return err
	}
	req.OwnerUserId, req.Name, req.ClientRequestId = o.owner, o.name, crid.AppendBytes(nil)
	return nil
}

// requestKey is --request-id, or a random non-zero key.
func (o *membershipOptions) requestKey() (contract.U128, error) {
	if o.requestID != "" {
		k, err := parseHex128(o.requestID, false)
		if err != nil {
			return k, fmt.Errorf("qimctl: --request-id: %w", err)
		}
		return k, nil
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return contract.U128{}, fmt.Errorf("qimctl: request id: %w", err)
	}
	k, _ := contract.U128FromBytes(b[:])
	if k.IsZero() {
		k.Lo = 1
	}
	return k, nil
}

// adminGroup makes the call. An unreachable writer fails fast (no wait-for-ready) with an
// error that says what to fix.
func adminGroup(ctx context.Context, addr string, creds grpc.DialOption, req *internalv1.AdminGroupRequest, timeout time.Duration) (*internalv1.AdminGroupOutcome, error) {
	cc, err := grpc.NewClient(addr, creds)
	if err != nil {
		return nil, fmt.Errorf("qimctl: writer address %q: %w (pass --writer host:port)", addr, err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := internalv1.NewGroupAdminClient(cc).AdminGroup(ctx, req)
	if err != nil {
		return nil, rpcError(addr, err)
	}
	return res, nil
}

// rpcError turns a transport failure into advice.
func rpcError(addr string, err error) error {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return fmt.Errorf("qimctl: writer at %s unreachable: %w — is the writer running? Point --writer (or "+
			"QIM_WRITER_ADDRS) at its gRPC listener, QIM_WRITER_LISTEN; a TLS error means the writer's certificate "+
			"is not from --ca or lacks the name writer.qim.internal", addr, err)
	case codes.PermissionDenied:
		return fmt.Errorf("qimctl: the writer at %s refused the admin certificate: %w — list its fingerprint as "+
			"admin:<sha256> in the writer's QIM_RPC_PEERS (qimctl certs dev prints it)", addr, err)
	case codes.Unimplemented:
		return fmt.Errorf("qimctl: the service at %s does not serve GroupAdmin: %w — is it the writer, and a version "+
			"with groups?", addr, err)
	}
	return fmt.Errorf("qimctl: AdminGroup at %s: %w", addr, err)
}

// refusal is the writer's answer with an error code from the contract's table.
func refusal(res *internalv1.AdminGroupOutcome) error {
	code := contract.ErrorCode(res.GetErrorCode())
	return fmt.Errorf("qimctl: the writer refused: %s (%d): %s", code, uint32(code), res.GetErrorMessage())
}

// firstAddr is the first entry of a comma-separated address list ("" for none).
func firstAddr(list string) string {
	first, _, _ := strings.Cut(list, ",")
	return strings.TrimSpace(first)
}
