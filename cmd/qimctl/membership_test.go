package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

const testGroup = "2f4c0e9a1b7d3c5e8f6a2b4c6d8e0f1a"

func TestParseHex128(t *testing.T) {
	tests := []struct {
		in        string
		emptyZero bool
		want      contract.U128
		ok        bool
	}{
		{testGroup, false, contract.U128{Hi: 0x2f4c0e9a1b7d3c5e, Lo: 0x8f6a2b4c6d8e0f1a}, true},
		{"0x2A", false, contract.U128{Lo: 0x2a}, true},
		{"  ab ", false, contract.U128{Lo: 0xab}, true},
		{"", true, contract.U128{}, true},
		{"", false, contract.U128{}, false},
		{"0", false, contract.U128{}, false},
		{"xyz", false, contract.U128{}, false},
		{testGroup + "0", false, contract.U128{}, false},
	}
	for _, tc := range tests {
		got, err := parseHex128(tc.in, tc.emptyZero)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseHex128(%q, %v) = %v, %v", tc.in, tc.emptyZero, got, err)
		}
	}
}

func TestParseUsers(t *testing.T) {
	tests := []struct {
		in   string
		want string // fmt of the ids, or "error"
	}{
		{"1,2,3", "[1 2 3]"},
		{" 7 , 9", "[7 9]"},
		{"", "[]"},
		{"1,,2", "error"},
		{"1,0", "error"},
		{"1,x", "error"},
		{"4,4", "error"},
		{"-1", "error"},
	}
	for _, tc := range tests {
		got, err := parseUsers(tc.in)
		s := "error"
		if err == nil {
			s = fmt.Sprint(got)
		}
		if s != tc.want {
			t.Errorf("parseUsers(%q) = %s (%v), want %s", tc.in, s, err, tc.want)
		}
	}
}

func TestMembershipRequest(t *testing.T) {
	env := func(k string) string {
		return map[string]string{"QIM_WRITER_ADDRS": "127.0.0.1:7100,127.0.0.1:7200"}[k]
	}
	o := &membershipOptions{owner: 5, users: "6,7", name: "team", requestID: "2a", tenant: "ab", timeout: time.Second}
	addr, req, err := o.request(contract.AdminGroupCreate, env)
	if err != nil {
		t.Fatal(err)
	}
	want := &internalv1.AdminGroupRequest{Op: 1, TenantId: contract.U128{Lo: 0xab}.AppendBytes(nil), OwnerUserId: 5,
		UserIds: []uint64{6, 7}, Name: "team", ClientRequestId: contract.U128{Lo: 0x2a}.AppendBytes(nil)}
	if addr != "127.0.0.1:7100" || !proto.Equal(req, want) {
		t.Fatalf("create: %s %v, want the first of QIM_WRITER_ADDRS and %v", addr, req, want)
	}
	o = &membershipOptions{owner: 5, name: "team", timeout: time.Second, writer: "flag:1"}
	addr, a, _ := o.request(contract.AdminGroupCreate, env)
	_, b, _ := o.request(contract.AdminGroupCreate, env)
	if addr != "flag:1" || len(a.GetClientRequestId()) != 16 || bytes.Equal(a.GetClientRequestId(), b.GetClientRequestId()) {
		t.Fatalf("without --request-id: addr %s keys %x %x, want --writer and two random keys", addr, a.GetClientRequestId(), b.GetClientRequestId())
	}
	o = &membershipOptions{group: testGroup, users: "9", timeout: time.Second}
	if _, req, err = o.request(contract.AdminGroupRemove, env); err != nil || req.GetOp() != 3 || hexID(req.GetGroupId()) != testGroup {
		t.Fatalf("remove: %v %v", req, err)
	}
	refusals := []struct {
		name string
		o    membershipOptions
		op   contract.AdminGroupOp
		want string
	}{
		{"no writer", membershipOptions{group: testGroup, timeout: time.Second}, contract.AdminGroupList, "--writer"},
		{"no owner", membershipOptions{writer: "w", name: "n", timeout: time.Second}, contract.AdminGroupCreate, "--owner"},
		{"no name", membershipOptions{writer: "w", owner: 1, timeout: time.Second}, contract.AdminGroupCreate, "--name"},
		{"bad group", membershipOptions{writer: "w", group: "g", timeout: time.Second}, contract.AdminGroupList, "--group"},
		{"add nobody", membershipOptions{writer: "w", group: testGroup, timeout: time.Second}, contract.AdminGroupAdd, "--users"},
		{"bad request id", membershipOptions{writer: "w", owner: 1, name: "n", requestID: "0", timeout: time.Second}, contract.AdminGroupCreate, "--request-id"},
		{"zero timeout", membershipOptions{writer: "w", group: testGroup}, contract.AdminGroupList, "--timeout"},
	}
	for _, tc := range refusals {
		if _, _, err := tc.o.request(tc.op, func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %s", tc.name, err, tc.want)
		}
	}
}

func TestMembershipOutput(t *testing.T) {
	g, _ := parseHex128(testGroup, false)
	gid := g.AppendBytes(nil)
	tests := []struct {
		op   contract.AdminGroupOp
		req  *internalv1.AdminGroupRequest
		res  *internalv1.AdminGroupOutcome
		want string
	}{
		{contract.AdminGroupCreate, &internalv1.AdminGroupRequest{ClientRequestId: contract.U128{Lo: 0x2a}.AppendBytes(nil)},
			&internalv1.AdminGroupOutcome{GroupId: gid, MembershipVersion: 1, ConversationSeq: 1},
			"group " + testGroup + " created: membership version 1, CREATE at seq 1\n" +
				"request id 0000000000000000000000000000002a (repeat with --request-id 0000000000000000000000000000002a to retry this create)\n"},
		{contract.AdminGroupCreate, &internalv1.AdminGroupRequest{ClientRequestId: contract.U128{Lo: 0x2a}.AppendBytes(nil)},
			&internalv1.AdminGroupOutcome{GroupId: gid, MembershipVersion: 1},
			"group " + testGroup + " created: membership version 1\n" +
				"request id 0000000000000000000000000000002a (repeat with --request-id 0000000000000000000000000000002a to retry this create)\n"},
		{contract.AdminGroupAdd, &internalv1.AdminGroupRequest{UserIds: []uint64{4, 5}},
			&internalv1.AdminGroupOutcome{GroupId: gid, MembershipVersion: 3, ConversationSeq: 17},
			"group " + testGroup + ": added 4,5 at seq 17, membership version 3\n"},
		{contract.AdminGroupRemove, &internalv1.AdminGroupRequest{UserIds: []uint64{4}},
			&internalv1.AdminGroupOutcome{GroupId: gid, MembershipVersion: 3},
			"group " + testGroup + ": nothing changed (already removed), membership version 3\n"},
		{contract.AdminGroupList, &internalv1.AdminGroupRequest{}, &internalv1.AdminGroupOutcome{GroupId: gid, MembershipVersion: 4,
			Members: []*qimv1.Member{{UserId: 1}, {UserId: 1004, JoinedAtSeq: 16}, {UserId: 77, JoinedAtSeq: 2, LeftAtSeq: 9}}},
			"group " + testGroup + ": 3 members, membership version 4\n" +
				"USER  JOINED_AT  LEFT_AT\n" +
				"1     0          -\n" +
				"1004  16         -\n" +
				"77    2          9\n"},
	}
	for _, tc := range tests {
		var b bytes.Buffer
		if err := writeOutcome(&b, tc.op, tc.req, tc.res); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("op %d:\n%s\nwant:\n%s", tc.op, b.String(), tc.want)
		}
	}
}

// A writer that is not there fails at once with the fix in the message.
func TestMembershipWriterUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	_, _, err = run(t, "membership", "list", "--group", testGroup, "--writer", addr, "--timeout", "5s", "--certs", devCerts(t).Dir)
	if err == nil || !strings.Contains(err.Error(), "unreachable") || !strings.Contains(err.Error(), "--writer") {
		t.Fatalf("error %v, want one saying the writer is unreachable and naming --writer", err)
	}
}

// fakeAdmin answers AdminGroup in-process, so the command's wiring is tested without a writer.
type fakeAdmin struct {
	internalv1.UnimplementedGroupAdminServer
	got *internalv1.AdminGroupRequest
	res *internalv1.AdminGroupOutcome
}

func (f *fakeAdmin) AdminGroup(_ context.Context, req *internalv1.AdminGroupRequest) (*internalv1.AdminGroupOutcome, error) {
	f.got = req
	return f.res, nil
}

func TestMembershipCommandCallsTheWriter(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	certs := devCerts(t)
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(writerTLS(t, certs))))
	fake := &fakeAdmin{res: &internalv1.AdminGroupOutcome{ErrorCode: uint32(contract.ErrCodeGroupFull), ErrorMessage: "1001 members"}}
	internalv1.RegisterGroupAdminServer(srv, fake)
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()
	t.Setenv("QIM_WRITER_ADDRS", ln.Addr().String())
	if _, _, err := run(t, "membership", "add", "--group", testGroup, "--users", "1,2"); err == nil ||
		!strings.Contains(err.Error(), "needs an admin certificate, even on loopback") {
		t.Fatalf("without --certs: %v, want the admin certificate named", err)
	}
	t.Setenv("QIM_RPC_TLS_CA", certs.CA)
	out, _, err := run(t, "membership", "add", "--group", testGroup, "--users", "1,2", "--cert", certs.Certs["admin"].CertFile,
		"--key", certs.Certs["admin"].KeyFile)
	if err == nil || !strings.Contains(err.Error(), "GROUP_FULL (12)") || out != "" {
		t.Fatalf("refusal: %v, stdout %q; want GROUP_FULL (12) and nothing printed", err, out)
	}
	if fake.got.GetOp() != uint32(contract.AdminGroupAdd) || hexID(fake.got.GetGroupId()) != testGroup || len(fake.got.GetUserIds()) != 2 {
		t.Fatalf("writer got %v", fake.got)
	}
	fake.res = &internalv1.AdminGroupOutcome{GroupId: fake.got.GetGroupId(), MembershipVersion: 2, Members: []*qimv1.Member{{UserId: 1}}}
	if out, _, err = run(t, "membership", "list", "--group", testGroup, "--certs", certs.Dir); err != nil || !strings.Contains(out, "1 members") {
		t.Fatalf("list: %v %q", err, out)
	}
}
