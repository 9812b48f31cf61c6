package ratelimit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	"golang.org/x/time/rate"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/authn"
)

// ErrRules is wrapped by every error of a rate-limit file.
var ErrRules = errors.New("ratelimit: invalid rules")

// Rule is one token bucket: PerSecond tokens come back each second up to Burst. A zero
// PerSecond is no limit.
type Rule struct {
	PerSecond float64 `json:"per_second"`
	Burst     int     `json:"burst"`
}

// Off reports whether the rule limits nothing.
func (r Rule) Off() bool { return r.PerSecond == 0 }

// refill is how long an empty bucket takes to fill up.
func (r Rule) refill() time.Duration {
	if r.Off() {
		return 0
	}
	return time.Duration(float64(r.Burst) / r.PerSecond * float64(time.Second))
}

func (r Rule) limiter() *rate.Limiter {
	if r.Off() {
		return nil
	}
	return rate.NewLimiter(rate.Limit(r.PerSecond), r.Burst)
}

func (r Rule) validate(where string) error {
	switch {
	case math.IsNaN(r.PerSecond) || r.PerSecond < 0 || r.PerSecond > 1e6:
		return fmt.Errorf("%w: %s: per_second %v not in [0, 1000000]", ErrRules, where, r.PerSecond)
	case !r.Off() && (r.Burst < 1 || r.Burst > 1_000_000):
		return fmt.Errorf("%w: %s: burst %d not in [1, 1000000]", ErrRules, where, r.Burst)
	case !r.Off() && float64(r.Burst)/r.PerSecond > 86400:
		return fmt.Errorf("%w: %s: a burst of %d at %v per second takes over a day to refill", ErrRules, where, r.Burst, r.PerSecond)
	}
	return nil
}

// Tier is the three buckets a SEND passes: its connection's, its sender's (all the user's
// devices, on every gateway) and its tenant's (every sender of the tenant, on every gateway).
type Tier struct {
	Connection Rule
	Sender     Rule
	Tenant     Rule
}

// tierFile is a Tier as the file writes it: a missing scope inherits.
type tierFile struct {
	Connection *Rule `json:"connection,omitempty"`
	Sender     *Rule `json:"sender,omitempty"`
	Tenant     *Rule `json:"tenant,omitempty"`
}

func (f tierFile) over(base Tier) Tier {
	for _, s := range []struct {
		from *Rule
		to   *Rule
	}{{f.Connection, &base.Connection}, {f.Sender, &base.Sender}, {f.Tenant, &base.Tenant}} {
		if s.from != nil {
			*s.to = *s.from
		}
	}
	return base
}

func (t Tier) validate(where string) error {
	return errors.Join(t.Connection.validate(where+" connection"), t.Sender.validate(where+" sender"),
		t.Tenant.validate(where+" tenant"))
}

// File is the JSON document of QIM_GATEWAY_RATE_LIMITS: the default tier and the tenants that
// differ from it, keyed by tenant (32 hex digits or a decimal). Scopes a tenant does not name
// are the default's; scopes the default does not name are DefaultTier's.
type File struct {
	Default tierFile            `json:"default"`
	Tenants map[string]tierFile `json:"tenants,omitempty"`
}

// DefaultTier applies without a file: a connection and a sender may send 100 messages a second
// after a burst of 200, a tenant is not limited. A person types far below it; a misbehaving
// client or script hits it within two seconds and costs the writers no more than one fast
// client. The tenant-wide bucket is off because only the operator knows a tenant's size.
func DefaultTier() Tier {
	return Tier{Connection: Rule{PerSecond: 100, Burst: 200}, Sender: Rule{PerSecond: 100, Burst: 200}}
}

// Rules are the tiers in force: the default and the tenants' own.
type Rules struct {
	def     Tier
	tenants map[contract.TenantID]Tier
}

// DefaultRules are DefaultTier for every tenant.
func DefaultRules() Rules { return Rules{def: DefaultTier()} }

// For is the tier of tenant.
func (r Rules) For(tenant contract.TenantID) Tier {
	if t, ok := r.tenants[tenant]; ok {
		return t
	}
	return r.def
}

// longestRefill is the longest time any bucket takes to fill: an idle bucket forgotten after
// it is full again loses nothing.
func (r Rules) longestRefill() time.Duration {
	var d time.Duration
	for _, t := range append([]Tier{r.def}, mapValues(r.tenants)...) {
		d = max(d, t.Connection.refill(), t.Sender.refill(), t.Tenant.refill())
	}
	return d
}

func mapValues(m map[contract.TenantID]Tier) []Tier {
	out := make([]Tier, 0, len(m))
	for _, t := range m {
		out = append(out, t)
	}
	return out
}

// Parse reads a rate-limit file's JSON. Unknown fields are refused, so a misspelt scope does
// not silently leave a tenant unlimited.
func Parse(b []byte) (Rules, error) {
	var f File
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&f); err != nil {
		return Rules{}, fmt.Errorf("%w: %v", ErrRules, err)
	}
	r := Rules{def: f.Default.over(DefaultTier()), tenants: map[contract.TenantID]Tier{}}
	if err := r.def.validate("default"); err != nil {
		return Rules{}, err
	}
	for k, tf := range f.Tenants {
		tenant, err := authn.ParseTenant(k)
		if err != nil {
			return Rules{}, fmt.Errorf("%w: tenants: %v", ErrRules, err)
		}
		if _, dup := r.tenants[tenant]; dup {
			return Rules{}, fmt.Errorf("%w: tenant %s is listed twice", ErrRules, tenant)
		}
		t := tf.over(r.def)
		if err := t.validate("tenant " + k); err != nil {
			return Rules{}, err
		}
		r.tenants[tenant] = t
	}
	return r, nil
}

// Load reads and parses the file at path.
func Load(path string) (Rules, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Rules{}, fmt.Errorf("%w: %v", ErrRules, err)
	}
	return Parse(b)
}
