package svc_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/svc"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// TestDeploymentRunsTheBoundary: the harness's writer serves mTLS (so every gate runs the
// production boundary), refuses a plaintext caller, and answers the harness's admin certificate.
func TestDeploymentRunsTheBoundary(t *testing.T) {
	ctx, set := deploy(t)
	if !set.MTLS() {
		t.Fatal("a binary of this checkout was not given the boundary")
	}
	if err := set.Start(ctx, svc.Writer); err != nil {
		t.Fatal(err)
	}
	if tail := set.LogTail(svc.Writer, 50); !strings.Contains(tail, `"rpc":"mtls"`) {
		t.Fatalf("the writer does not say it serves mTLS:\n%s", tail)
	}
	call := func(creds grpc.DialOption) (*internalv1.AdminGroupOutcome, error) {
		cc, err := grpc.NewClient(set.Addrs.Writer, creds)
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		cctx, ccancel := context.WithTimeout(ctx, 20*time.Second)
		defer ccancel()
		return internalv1.NewGroupAdminClient(cc).AdminGroup(cctx,
			&internalv1.AdminGroupRequest{TenantId: make([]byte, 16), Op: uint32(contract.AdminGroupList), GroupId: make([]byte, 16)})
	}
	if _, err := call(grpc.WithTransportCredentials(insecure.NewCredentials())); status.Code(err) != codes.Unavailable {
		t.Fatalf("plaintext caller: %v, want Unavailable (no TLS handshake)", err)
	}
	admin, err := set.AdminDialOption()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := call(admin); err != nil {
		t.Fatalf("the harness's admin certificate: %v", err)
	}
}
