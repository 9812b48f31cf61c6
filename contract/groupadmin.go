package contract

import "fmt"

// AdminGroupOp is AdminGroupRequest.op of the writer's GroupAdmin RPC (raw uint32 on the wire).
//
// It is not a MembershipOp, although both start with CREATE, ADD and REMOVE at the same values:
// 4 is LIST here and LEAVE there. One Go type per wire field keeps a caller from sending one
// table's value in the other's field (the e2e gate once passed MembershipOp values to GroupAdmin,
// right only because ADD and REMOVE happen to agree).
type AdminGroupOp uint32

const (
	AdminGroupCreate AdminGroupOp = 1
	AdminGroupAdd    AdminGroupOp = 2
	AdminGroupRemove AdminGroupOp = 3
	AdminGroupList   AdminGroupOp = 4
)

func (o AdminGroupOp) String() string {
	switch o {
	case AdminGroupCreate:
		return "CREATE"
	case AdminGroupAdd:
		return "ADD"
	case AdminGroupRemove:
		return "REMOVE"
	case AdminGroupList:
		return "LIST"
	}
	return fmt.Sprintf("AdminGroupOp(%d)", uint32(o))
}

// Membership is the membership change an ADD or REMOVE commits; ok is false for CREATE, LIST
// and unknown values.
func (o AdminGroupOp) Membership() (op MembershipOp, ok bool) {
	switch o {
	case AdminGroupAdd:
		return MembershipAdd, true
	case AdminGroupRemove:
		return MembershipRemove, true
	}
	return 0, false
}
