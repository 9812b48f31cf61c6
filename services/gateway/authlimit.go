package gateway

import (
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"golang.org/x/time/rate"
)

// authLimitAddrs bounds the addresses tracked at once (~200 bytes each). Beyond it the least
// recently failing address is forgotten, which can only let it fail more, never refuse anyone.
const authLimitAddrs = 100_000

// authLimiter bounds failed AUTHs per source address. Each refused credential takes a token from
// the address's bucket (QIM_GATEWAY_AUTH_FAILURE_BURST, one back every
// QIM_GATEWAY_AUTH_FAILURE_REFILL); an address with an empty bucket is answered RATE_LIMITED
// before any verification work — no JWKS lookup, no webhook call, no signature check. Successful
// logins cost nothing, so many honest users behind one NAT are limited by their failures only.
//
// Rejected alternative: limiting every AUTH per address. It would cut off a NAT's honest users at
// a reconnect storm (a gateway restart) while an attacker's failures cost the same as theirs.
type authLimiter struct {
	mu      sync.Mutex
	burst   int
	every   rate.Limit
	buckets *expirable.LRU[string, *rate.Limiter]
}

func newAuthLimiter(burst int, refill time.Duration) *authLimiter {
	// An idle bucket is full again after burst×refill, so forgetting it then changes nothing.
	ttl := time.Duration(burst) * refill
	return &authLimiter{burst: burst, every: rate.Every(refill),
		buckets: expirable.NewLRU[string, *rate.Limiter](authLimitAddrs, nil, ttl)}
}

// blocked reports whether addr has no failure left to spend.
func (l *authLimiter) blocked(addr string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets.Peek(addr)
	return ok && b.Tokens() < 1
}

// failed spends one of addr's failures.
func (l *authLimiter) failed(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets.Get(addr)
	if !ok {
		b = rate.NewLimiter(l.every, l.burst)
		l.buckets.Add(addr, b)
	}
	b.Allow()
}
