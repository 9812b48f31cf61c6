package authn_test

import (
	"context"
	"testing"
	"time"

	"github.com/qim-dev/qim/services/authn"
)

// BenchmarkVerify is AUTH's verification cost per algorithm: a cached JWKS key, the whole
// Router path (shape, iss peek, parse, signature, claims). `make bench` records it.
func BenchmarkVerify(b *testing.B) {
	f := newFixture(b)
	for _, alg := range []string{"EdDSA", "ES256", "RS256"} {
		c := f.idp.Claims(42, "phone", time.Hour)
		c["tenant"] = "9"
		tok, err := f.idp.Sign(f.kids[alg], c, false)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(alg, func(b *testing.B) {
			for b.Loop() {
				if _, err := f.r.Verify(context.Background(), authn.Credential{Token: tok}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	dev := devTok(b, []byte("dev-secret-0123456789"))
	b.Run("devtoken", func(b *testing.B) {
		for b.Loop() {
			if _, err := f.r.Verify(context.Background(), authn.Credential{Token: dev}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
