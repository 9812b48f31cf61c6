package cqlstore

import (
	"errors"
	"strings"
	"testing"
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
