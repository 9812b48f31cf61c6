package cqlstore

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/rpc"
)

func TestBackendConfigResolvesAndRefuses(t *testing.T) {
	for _, tc := range []struct {
		in      BackendConfig
		backend string
		err     string
	}{
		{BackendConfig{}, BackendRedis, ""},
		{BackendConfig{CQLHosts: []string{"127.0.0.1:9042"}}, BackendTiered, ""},
		{BackendConfig{Backend: "redis", CQLHosts: []string{"127.0.0.1:9042"}}, BackendRedis, ""},
		{BackendConfig{Backend: "tiered"}, "", "QIM_CQL_HOSTS"},
		{BackendConfig{Backend: "scylla"}, "", "neither"},
		{BackendConfig{Backend: "tiered", CQLHosts: []string{"nohost"}}, "", "nohost"},
	} {
		err := tc.in.Validate()
		switch {
		case tc.err == "" && (err != nil || tc.in.Backend != tc.backend):
			t.Errorf("%+v: Validate = %v, backend %q; want %q", tc.in, err, tc.in.Backend, tc.backend)
		case tc.err != "" && (err == nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%+v: Validate = %v, want ErrConfig naming %q", tc.in, err, tc.err)
		}
	}
}

// A corrupt archive answers INTERNAL through every service (rpc.CodeOf), not UNAVAILABLE:
// retrying cannot make a damaged record readable.
func TestArchiveCorruptionIsInternal(t *testing.T) {
	if got := rpc.CodeOf(fmt.Errorf("writer: history page: %w", ErrCorrupt)); got != contract.ErrCodeInternal {
		t.Fatalf("rpc.CodeOf(ErrCorrupt) = %v, want INTERNAL", got)
	}
}
