package writer

// AdminSend: a SYSTEM message from the product's system account (the admin API's POST
// /v1/messages). It is a client SEND in all but who may make it: the same validation, identity
// and commit, so it is idempotent by client_message_id and a group target needs the sender to
// be a current member. Only the type differs: SYSTEM, which parseSendOf refuses from clients.
//
// Rejected: a sender-less system message (user 0) in its own conversation kind. It would need a
// fourth conversation kind through the mailbox, session and SDK, where a system account is a
// user every one of them already handles.

import (
	"context"

	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// adminSendDevice is the sender device of a system message.
const adminSendDevice = "admin-api"

func (a adminServer) AdminSend(ctx context.Context, in *internalv1.AdminSendRequest) (*internalv1.SendOutcome, error) {
	return a.s.sendAndWait(ctx, &internalv1.AuthenticatedSend{TenantId: in.GetTenantId(), SenderUserId: in.GetSenderUserId(),
		SenderDeviceId: adminSendDevice, SendRequest: in.GetSendRequest()}, true)
}
