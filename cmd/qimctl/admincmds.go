package main

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/qim-dev/qim/services/admin"
)

// newAdminAPICmds are the admin API's routes as subcommands of qimctl admin.
func newAdminAPICmds() []*cobra.Command {
	return []*cobra.Command{newAdminKickCmd(), newAdminDevicesCmd(), newAdminMessageCmd(), newAdminGroupCmd(), newAdminRoomCmd()}
}

func newAdminKickCmd() *cobra.Command {
	a, req := &adminAPI{}, admin.KickRequest{}
	cmd := &cobra.Command{
		Use:   "kick",
		Short: "End a user's or a device's live sessions (KICKED_BY_ADMIN); credentials stay valid",
		Long: `Ends the live sessions of --user (or of one --device) on every gateway with KICKED reason 6,
KICKED_BY_ADMIN. The client does not reconnect on its own, but a new sign-in is accepted: to keep
the user out, use qimctl revoke. Prints how many gateways received the kick.

Examples:
  qimctl admin kick --url http://10.0.0.9:7300 --key-file ops.key --user 42 --device phone`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			req.Tenant = a.tenant
			return a.call(cmd.Context(), http.MethodPost, "/v1/kicks", req, cmd.OutOrStdout())
		},
	}
	a.flags(cmd)
	cmd.Flags().Uint64Var(&req.User, "user", 0, "user id (required)")
	cmd.Flags().StringVar(&req.Device, "device", "", "device id (default: every device of the user)")
	_ = cmd.MarkFlagRequired("user")
	return cmd
}

func newAdminDevicesCmd() *cobra.Command {
	a, user := &adminAPI{}, uint64(0)
	cmd := &cobra.Command{
		Use:     "devices",
		Short:   "List where a user is online: each device holding a session and its gateway",
		Example: `  qimctl admin devices --url http://10.0.0.9:7300 --key-file ops.key --user 42`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.call(cmd.Context(), http.MethodGet, "/v1/devices"+a.query("user", strconv.FormatUint(user, 10)), nil, cmd.OutOrStdout())
		},
	}
	a.flags(cmd)
	cmd.Flags().Uint64Var(&user, "user", 0, "user id (required)")
	_ = cmd.MarkFlagRequired("user")
	return cmd
}

func newAdminMessageCmd() *cobra.Command {
	a, req := &adminAPI{}, admin.MessageRequest{}
	cmd := &cobra.Command{
		Use:   "message",
		Short: "Send a SYSTEM message from the product's system account to a user or a group",
		Long: `Sends a SYSTEM message (type 5, which no client may send) as --sender, the product's system
account, to --to-user or to --group (the account must be a current member of the group). The
call is idempotent by --client-message-id (random when omitted, and printed).

Examples:
  qimctl admin message --url http://10.0.0.9:7300 --key-file ops.key --sender 1 --to-user 42 --body "maintenance at 02:00"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			req.Tenant = a.tenant
			return a.call(cmd.Context(), http.MethodPost, "/v1/messages", req, cmd.OutOrStdout())
		},
	}
	a.flags(cmd)
	f := cmd.Flags()
	f.Uint64Var(&req.Sender, "sender", 0, "the system account's user id (required)")
	f.Uint64Var(&req.ToUser, "to-user", 0, "recipient user id (or --group)")
	f.StringVar(&req.Group, "group", "", "recipient group id, 32 hex digits (or --to-user)")
	f.StringVar(&req.Body, "body", "", "the message text (required)")
	f.StringVar(&req.CustomType, "custom-type", "", "the product's own sub-type")
	f.StringVar(&req.ClientMessageID, "client-message-id", "", "idempotency key, 32 hex digits (default: random)")
	_ = cmd.MarkFlagRequired("sender")
	_ = cmd.MarkFlagRequired("body")
	return cmd
}

func newAdminGroupCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "group", Short: "Create groups and change or list their members through the admin API"}
	create, cr, members := &adminAPI{}, admin.GroupCreateRequest{}, ""
	c := &cobra.Command{Use: "create", Short: "Create a group owned by --owner", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if cr.Members, err = parseUsers(members); err != nil {
				return fmt.Errorf("qimctl admin group create: --members: %w", err)
			}
			cr.Tenant = create.tenant
			return create.call(cmd.Context(), http.MethodPost, "/v1/groups", cr, cmd.OutOrStdout())
		}}
	create.flags(c)
	c.Flags().Uint64Var(&cr.Owner, "owner", 0, "owner user id (required)")
	c.Flags().StringVar(&members, "members", "", "initial members besides the owner, comma-separated")
	c.Flags().StringVar(&cr.Name, "name", "", "display name (required)")
	c.Flags().StringVar(&cr.RequestID, "request-id", "", "idempotency key, 32 hex digits (default: random)")
	_ = c.MarkFlagRequired("owner")
	_ = c.MarkFlagRequired("name")
	cmd.AddCommand(c, newAdminMembersCmd("add", http.MethodPost), newAdminMembersCmd("remove", http.MethodDelete), newAdminGroupListCmd())
	return cmd
}

func newAdminMembersCmd(verb, method string) *cobra.Command {
	a, req, users := &adminAPI{}, admin.GroupMembersRequest{}, ""
	cmd := &cobra.Command{Use: verb, Short: verb + " members of --group (one CONTROL message for all of them)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if req.Users, err = parseUsers(users); err != nil || len(req.Users) == 0 {
				return fmt.Errorf("qimctl admin group %s: --users: name at least one user id (%v)", verb, err)
			}
			req.Tenant = a.tenant
			return a.call(cmd.Context(), method, "/v1/groups/members", req, cmd.OutOrStdout())
		}}
	a.flags(cmd)
	cmd.Flags().StringVar(&req.Group, "group", "", "group id, 32 hex digits (required)")
	cmd.Flags().StringVar(&users, "users", "", "user ids, comma-separated (required)")
	_ = cmd.MarkFlagRequired("group")
	_ = cmd.MarkFlagRequired("users")
	return cmd
}

func newAdminGroupListCmd() *cobra.Command {
	a, group := &adminAPI{}, ""
	cmd := &cobra.Command{Use: "list", Short: "List a group's current members", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.call(cmd.Context(), http.MethodGet, "/v1/groups/members"+a.query("group", group), nil, cmd.OutOrStdout())
		}}
	a.flags(cmd)
	cmd.Flags().StringVar(&group, "group", "", "group id, 32 hex digits (required)")
	_ = cmd.MarkFlagRequired("group")
	return cmd
}
