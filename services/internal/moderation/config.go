package moderation

import (
	"fmt"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/authn"
)

// Config is the deployment's pre-send hook (the QIM_MODERATION_URL family), read by every
// writer and RoomWriter: one hook asked about every client SEND, room events included. No URL:
// no hook, every SEND is committed without asking.
type Config struct {
	// URL of the product's moderation endpoint: https, or http on loopback.
	URL string `env:"QIM_MODERATION_URL" doc:"pre-send moderation hook (https, or http on loopback); unset: no hook"`
	// Timeout bounds one call. Every moderated SEND's SEND_ACK waits for it: it spends the
	// SEND_ACK latency budget (150 ms at P99), so keep the hook well inside it.
	Timeout time.Duration `env:"QIM_MODERATION_TIMEOUT" doc:"bound of one moderation hook call (10ms..10s)"`
	// FailOpen commits SENDs unchecked while the hook does not answer (counted). Default: refuse
	// them UNAVAILABLE (the client retries with the same client_message_id), so nothing the
	// product has not seen is delivered; the price is that a hook outage stops moderated sends.
	FailOpen bool `env:"QIM_MODERATION_FAIL_OPEN" doc:"commit SENDs unchecked while the hook does not answer (default: refuse them UNAVAILABLE)"`
	// MaxConcurrency bounds the calls in flight per writer; more wait within Timeout.
	MaxConcurrency int `env:"QIM_MODERATION_CONCURRENCY" unit:"calls" doc:"moderation hook calls in flight per process (1..4096)"`
	// Tenants limits the hook to these tenants (32 hex digits or decimals). Unset: every tenant.
	Tenants []string `env:"QIM_MODERATION_TENANTS" doc:"tenants whose SENDs the hook checks, comma-separated (unset: every tenant)"`
	// tenants is Tenants as parsed by Validate; nil: every tenant.
	tenants map[contract.TenantID]bool
}

// DefaultConfig is no hook, with the knobs' defaults for when a URL is set.
func DefaultConfig() Config { return Config{Timeout: 100 * time.Millisecond, MaxConcurrency: 256} }

// Defaults fills the zero knobs with DefaultConfig's.
func (c *Config) Defaults() {
	d := DefaultConfig()
	if c.Timeout == 0 {
		c.Timeout = d.Timeout
	}
	if c.MaxConcurrency == 0 {
		c.MaxConcurrency = d.MaxConcurrency
	}
}

// Enabled reports whether a hook is configured.
func (c *Config) Enabled() bool { return c.URL != "" }

// Applies reports whether SENDs of tenant are checked.
func (c *Config) Applies(tenant contract.TenantID) bool {
	return c.Enabled() && (c.tenants == nil || c.tenants[tenant])
}

// Validate checks the hook's settings and parses the tenants.
func (c *Config) Validate() error {
	c.Defaults()
	if !c.Enabled() {
		return nil
	}
	if err := authn.CheckSecureURL(c.URL); err != nil {
		return fmt.Errorf("QIM_MODERATION_URL: %w: messages would cross the network in clear", err)
	}
	switch {
	case c.Timeout < 10*time.Millisecond || c.Timeout > 10*time.Second:
		return fmt.Errorf("QIM_MODERATION_TIMEOUT=%s not in [10ms, 10s]", c.Timeout)
	case c.MaxConcurrency < 1 || c.MaxConcurrency > 4096:
		return fmt.Errorf("QIM_MODERATION_CONCURRENCY=%d not in [1, 4096]", c.MaxConcurrency)
	}
	if len(c.Tenants) == 0 {
		return nil
	}
	c.tenants = map[contract.TenantID]bool{}
	for _, s := range c.Tenants {
		t, err := authn.ParseTenant(s)
		if err != nil {
			return fmt.Errorf("QIM_MODERATION_TENANTS: %w", err)
		}
		c.tenants[t] = true
	}
	return nil
}
