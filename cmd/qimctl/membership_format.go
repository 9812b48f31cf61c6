package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// parseHex128 reads a 16-byte id written in hex: an optional 0x and at most 32 digits (shorter
// forms are left-padded, so the 32-digit form printed elsewhere and a short one like 0x2a both
// work). Empty is zero when allowed (the tenant), an error otherwise.
func parseHex128(s string, emptyIsZero bool) (contract.U128, error) {
	h := strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(s), "0x"), "0X")
	switch {
	case h == "" && emptyIsZero:
		return contract.U128{}, nil
	case h == "":
		return contract.U128{}, errors.New("empty: want hex, at most 32 digits")
	case len(h) > 32:
		return contract.U128{}, fmt.Errorf("%q has %d hex digits, at most 32", s, len(h))
	}
	u, err := contract.ParseU128(strings.Repeat("0", 32-len(h)) + h)
	if err != nil {
		return contract.U128{}, fmt.Errorf("%q is not hex", s)
	}
	if u.IsZero() && !emptyIsZero {
		return contract.U128{}, fmt.Errorf("%q is zero", s)
	}
	return u, nil
}

// parseUsers reads "1,2,3" (spaces allowed); empty is none. A zero, a non-number or a repeated
// id is an error rather than something the writer silently drops.
func parseUsers(s string) ([]uint64, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []uint64
	seen := map[uint64]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		u, err := strconv.ParseUint(f, 10, 64)
		switch {
		case err != nil || u == 0:
			return nil, fmt.Errorf("%q is not a non-zero decimal user id", f)
		case seen[u]:
			return nil, fmt.Errorf("user %d listed twice", u)
		}
		seen[u] = true
		out = append(out, u)
	}
	return out, nil
}

// hexID prints a 16-byte id from the wire in the 32-digit form, or what it is when malformed.
func hexID(b []byte) string {
	u, err := contract.U128FromBytes(b)
	if err != nil {
		return fmt.Sprintf("<%d-byte id>", len(b))
	}
	return u.String()
}

// writeOutcome prints the answer to one operation.
func writeOutcome(w io.Writer, op contract.AdminGroupOp, req *internalv1.AdminGroupRequest, res *internalv1.AdminGroupOutcome) error {
	group := hexID(res.GetGroupId())
	var err error
	switch op {
	case contract.AdminGroupCreate:
		at := ""
		if seq := res.GetConversationSeq(); seq != 0 { // this writer leaves it 0 for a CREATE
			at = fmt.Sprintf(", CREATE at seq %d", seq)
		}
		_, err = fmt.Fprintf(w, "group %s created: membership version %d%s\nrequest id %s "+
			"(repeat with --request-id %[4]s to retry this create)\n", group, res.GetMembershipVersion(), at,
			hexID(req.GetClientRequestId()))
	case contract.AdminGroupAdd, contract.AdminGroupRemove:
		what := map[contract.AdminGroupOp]string{contract.AdminGroupAdd: "added", contract.AdminGroupRemove: "removed"}[op]
		if res.GetConversationSeq() == 0 {
			_, err = fmt.Fprintf(w, "group %s: nothing changed (already %s), membership version %d\n", group, what,
				res.GetMembershipVersion())
			break
		}
		_, err = fmt.Fprintf(w, "group %s: %s %s at seq %d, membership version %d\n", group, what,
			joinUsers(req.GetUserIds()), res.GetConversationSeq(), res.GetMembershipVersion())
	case contract.AdminGroupList:
		err = writeMembers(w, group, res)
	}
	return err
}

func writeMembers(w io.Writer, group string, res *internalv1.AdminGroupOutcome) error {
	if _, err := fmt.Fprintf(w, "group %s: %d members, membership version %d\n", group, len(res.GetMembers()),
		res.GetMembershipVersion()); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "USER\tJOINED_AT\tLEFT_AT")
	for _, m := range res.GetMembers() {
		left := "-"
		if m.GetLeftAtSeq() != 0 {
			left = strconv.FormatUint(m.GetLeftAtSeq(), 10)
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\n", m.GetUserId(), m.GetJoinedAtSeq(), left)
	}
	return tw.Flush()
}

func joinUsers(us []uint64) string {
	s := make([]string, len(us))
	for i, u := range us {
		s[i] = strconv.FormatUint(u, 10)
	}
	return strings.Join(s, ",")
}
