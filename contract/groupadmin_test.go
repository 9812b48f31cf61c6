package contract

import "testing"

// TestAdminGroupOpIsItsOwnTable: AdminGroupRequest.op is not MembershipChange.op. 4 is LIST in
// one and LEAVE in the other; only ADD and REMOVE map to membership changes.
func TestAdminGroupOpIsItsOwnTable(t *testing.T) {
	cases := []struct {
		op   AdminGroupOp
		name string
		mop  MembershipOp
		ok   bool
	}{
		{AdminGroupCreate, "CREATE", 0, false},
		{AdminGroupAdd, "ADD", MembershipAdd, true},
		{AdminGroupRemove, "REMOVE", MembershipRemove, true},
		{AdminGroupList, "LIST", 0, false},
		{AdminGroupOp(MembershipLeave), "LIST", 0, false},
		{5, "AdminGroupOp(5)", 0, false},
	}
	for _, tc := range cases {
		mop, ok := tc.op.Membership()
		if tc.op.String() != tc.name || mop != tc.mop || ok != tc.ok {
			t.Errorf("%d: %s, Membership() = %v, %v; want %s, %v, %v", uint32(tc.op), tc.op, mop, ok, tc.name, tc.mop, tc.ok)
		}
	}
}
