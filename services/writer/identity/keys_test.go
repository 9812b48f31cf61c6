package identity

import (
	"errors"
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/keyfamily"
)

// Frozen: the key layout is storage; a change orphans every high-water mark and lets a new window
// start below ids already issued.
func TestKeyLayoutGolden(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{HLCKey(1, 3), "qim:hlc:1:3"},
		{HLCKey(65535, 0), "qim:hlc:65535:0"},
		{LeaseKey(0, 1023), "qim:writer-lease:0:1023"},
		{string(appendLeasePrefix(nil, 7)), "qim:writer-lease:7:"},
	} {
		if tc.got != tc.want {
			t.Errorf("key %q, want %q", tc.got, tc.want)
		}
	}
}

// Every key this package builds belongs to exactly the family declared for it.
func TestKeyFamiliesClassifyBuiltKeys(t *testing.T) {
	fams := KeyFamilies()
	for _, f := range fams {
		if err := f.Validate(); err != nil {
			t.Error(err)
		}
	}
	for key, want := range map[string]string{
		HLCKey(65535, 0):                  "identity.hlc",
		LeaseKey(0, 1023):                 "identity.writer_lease",
		string(appendLeasePrefix(nil, 7)): "",
		HLCKey(1, 3) + ":4":               "",
	} {
		got := keyfamily.MatchingNames(fams, key)
		if (want == "" && len(got) != 0) || (want != "" && (len(got) != 1 || got[0] != want)) {
			t.Errorf("%q belongs to %v, want %q", key, got, want)
		}
	}
}

func TestClaimIDsReusedOnlyUntilSettled(t *testing.T) {
	c := claimIDs{tag: "abc"}
	first := c.current()
	if retry := c.current(); retry != first || first != "abc:1" {
		t.Fatalf("retry id %q, first %q", retry, first)
	}
	c.settle()
	if next := c.current(); next != "abc:2" {
		t.Fatalf("after settle: %q", next)
	}
}

func TestOptionsValidate(t *testing.T) {
	lease := &Lease{region: 1, writer: 2}
	issuerCases := []struct {
		name string
		opts []IssuerOption
		ok   bool
	}{
		{"defaults", nil, true},
		{"sub-millisecond window", []IssuerOption{WithWindow(1500 * time.Microsecond)}, false},
		{"renew-before not below window", []IssuerOption{WithWindow(time.Second), WithRenewBefore(time.Second)}, false},
		{"default renew-before above a short window", []IssuerOption{WithWindow(10 * time.Second)}, false},
		{"short window and renew-before", []IssuerOption{WithWindow(time.Second), WithRenewBefore(300 * time.Millisecond)}, true},
		{"inverted backoff", []IssuerOption{WithRetryBackoff(time.Second, time.Millisecond)}, false},
		{"matching lease", []IssuerOption{WithLease(lease)}, true},
		{"lease for another writer", []IssuerOption{WithLease(&Lease{region: 1, writer: 3})}, false},
	}
	for _, tc := range issuerCases {
		_, err := NewIssuer(nil, 1, 2, tc.opts...)
		if (err == nil) != tc.ok {
			t.Errorf("issuer %s: err %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
	leaseCases := []struct {
		name string
		opts []LeaseOption
		ok   bool
	}{
		{"defaults", nil, true},
		{"max writers 65536", []LeaseOption{WithMaxWriters(1 << 16)}, true},
		{"max writers too large", []LeaseOption{WithMaxWriters(1<<16 + 1)}, false},
		{"negative max writers", []LeaseOption{WithMaxWriters(-1)}, false},
		{"ttl not above renew", []LeaseOption{WithLeaseTiming(time.Second, time.Second)}, false},
		{"small test timing", []LeaseOption{WithLeaseTiming(50*time.Millisecond, 150*time.Millisecond)}, true},
	}
	for _, tc := range leaseCases {
		var cfg leaseConfig
		for _, o := range tc.opts {
			o(&cfg)
		}
		if err := cfg.validate(); (err == nil) != tc.ok {
			t.Errorf("lease %s: err %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
	var cfg leaseConfig
	_ = cfg.validate()
	if cfg.maxWriters != 1024 || cfg.ttl != 3*cfg.renew || cfg.renew != contract.WriterLeaseRenew {
		t.Errorf("lease defaults: %+v", cfg)
	}
}

func TestIssuerBeforeStart(t *testing.T) {
	is, err := NewIssuer(nil, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := is.Next(); !errors.Is(err, ErrNoWindow) {
		t.Fatalf("Next before Start: %v", err)
	}
}
