package gateway

import (
	"context"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// groupRequest forwards CREATE_GROUP, PULL_MEMBERS or LEAVE_GROUP to the writer with the identity
// proven at AUTH, and answers with the writer's reply (GROUP_CREATED, MEMBERS_BATCH,
// LEAVE_GROUP_ACK) or ERROR. The client's bytes travel untouched; the writer authorises.
func (c *conn) groupRequest(ctx context.Context, j pullJob) bool {
	out, err := c.s.writers.client(c.sess.key.tenant, userRoute(c.sess.key.user)).Group(ctx, &internalv1.AuthenticatedGroupRequest{TenantId: c.tenantBytes,
		ActorUserId: uint64(c.sess.key.user), ActorDeviceId: c.sess.device, Opcode: uint32(j.op), Payload: j.payload})
	if err != nil {
		return c.backendFailed(j.requestID, j.op, "group", err)
	}
	if code := contract.ErrorCode(out.GetErrorCode()); code != contract.ErrCodeUnspecified {
		return c.sendError(j.requestID, j.op, code, out.GetErrorMessage())
	}
	if want := groupAnswer(j.op); contract.Opcode(out.GetOpcode()) != want {
		return c.sendError(j.requestID, j.op, contract.ErrCodeInternal, "writer answered a group request with the wrong opcode")
	}
	return c.send(contract.Opcode(out.GetOpcode()), j.requestID, out.GetPayload())
}

func groupAnswer(op contract.Opcode) contract.Opcode {
	switch op {
	case contract.OpCreateGroup:
		return contract.OpGroupCreated
	case contract.OpPullMembers:
		return contract.OpMembersBatch
	}
	return contract.OpLeaveGroupAck
}
