package svc

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/qim-dev/qim/contract"
)

// FloodTenant is the tenant whose SEND limits the Set's gateways hold tight, for the scenarios
// that prove a flood is refused: a sender may send 10 at once and then one every five seconds, the
// whole tenant 100 at once and 50 a second. Every other tenant gets the harness tier below.
var FloodTenant = contract.TenantID{Hi: 0xf100d, Lo: 1}

// The limits of FloodTenant, as the scenarios expect them.
const (
	FloodSenderBurst     = 10
	FloodSenderPerSecond = 0.2
)

// harnessLimits is the Set's QIM_GATEWAY_RATE_LIMITS. The default tier is above anything the
// harness's own clients send from one connection or one user (the C ABI's 10,000 cycles run at
// ~450 a second, T-HEAVY's build sends from 50 connections at once), so no gate but the flood
// scenarios is shaped by a limit; the buckets are still passed, and the tenant bucket still
// shared through the core Redis, by every SEND of every gate.
const harnessLimits = `{
  "default": {
    "connection": {"per_second": 5000, "burst": 10000},
    "sender": {"per_second": 5000, "burst": 10000},
    "tenant": {"per_second": 100000, "burst": 200000}
  },
  "tenants": {
    "%s": {
      "connection": {"per_second": 100, "burst": 100},
      "sender": {"per_second": %g, "burst": %d},
      "tenant": {"per_second": 50, "burst": 100}
    }
  }
}
`

// writeRateLimits writes the rate-limit file into the Set's directory.
func (s *Set) writeRateLimits() error {
	path := filepath.Join(s.dir, "ratelimits.json")
	body := fmt.Sprintf(harnessLimits, FloodTenant, FloodSenderPerSecond, FloodSenderBurst)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		return fmt.Errorf("svc: rate limits: %w", err)
	}
	s.rateLimitsFile = path
	return nil
}

// LimitsFloodTenant reports whether the gateways are given the rate-limit file (the binary knows
// it; an A/B baseline may predate rate limits).
func (s *Set) LimitsFloodTenant() bool {
	return s.rateLimitsFile != "" && knows(s.bin, Gateway, "QIM_GATEWAY_RATE_LIMITS")
}

// rateLimitEnv adds the rate-limit file to a gateway's variables when its binary reads it.
func (s *Set) rateLimitEnv(vars map[string]string) {
	if s.LimitsFloodTenant() {
		vars["QIM_GATEWAY_RATE_LIMITS"] = s.rateLimitsFile
	}
}
