package presence

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

func TestRecordRoundTrip(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_123)
	for _, e := range []Entry{on(1, "phone", "10.0.0.1:7103", 3, 9), off(1, "phone", "10.0.0.1:7103", 3, 9), boot("10.0.0.1:7103", 4)} {
		v, err := Encode(e, now)
		if err != nil {
			t.Fatalf("Encode(%+v): %v", e, err)
		}
		got, at, err := Decode(v)
		if err != nil || got != e || !at.Equal(now) {
			t.Fatalf("Decode(Encode(%+v)) = %+v, %v, %v", e, got, at, err)
		}
	}
}

// Compaction keeps the last record per key, so a key must separate exactly what must survive
// side by side: devices, users, tenants, and above all gateways (see Key).
func TestKeysSeparateWhatCompactionMustKeep(t *testing.T) {
	base := on(1, "phone", "gA:1", 1, 5)
	other := func(f func(*Entry)) Entry { e := base; f(&e); return e }
	distinct := []Entry{
		base,
		other(func(e *Entry) { e.Gateway = "gB:1" }),
		other(func(e *Entry) { e.DeviceID = "laptop" }),
		other(func(e *Entry) { e.User = 2 }),
		other(func(e *Entry) { e.Tenant.Hi = 1 }),
		other(func(e *Entry) { e.DeviceID, e.Gateway = "phoneg", "A:1" }), // no shifting across the boundary
		boot("gA:1", 1),
	}
	seen := map[string]int{}
	for i, e := range distinct {
		k := string(Key(e))
		if j, dup := seen[k]; dup {
			t.Fatalf("entries %d and %d share key %q", j, i, k)
		}
		seen[k] = i
	}
	same := []Entry{other(func(e *Entry) { e.Epoch = 6 }), other(func(e *Entry) { e.Online = false }), other(func(e *Entry) { e.Boot = 2 })}
	for _, e := range same {
		if !bytes.Equal(Key(e), Key(base)) {
			t.Fatalf("%+v: a later entry of the same session must replace the earlier under compaction", e)
		}
	}
}

func TestDecodeRefusesWhatNoGatewayWrites(t *testing.T) {
	good := &internalv1.PresenceEntry{SchemaVersion: 1, TenantId: make([]byte, 16), UserId: 1, DeviceId: "phone",
		GatewayPushAddr: "gA:1", GatewayBoot: 1, SessionEpoch: 1, Online: true}
	for _, tc := range []struct {
		name string
		edit func(*internalv1.PresenceEntry)
	}{
		{"unknown schema", func(m *internalv1.PresenceEntry) { m.SchemaVersion = 2 }},
		{"short tenant", func(m *internalv1.PresenceEntry) { m.TenantId = m.TenantId[:15] }},
		{"no gateway", func(m *internalv1.PresenceEntry) { m.GatewayPushAddr = "" }},
		{"boot 0", func(m *internalv1.PresenceEntry) { m.GatewayBoot = 0 }},
		{"epoch 0", func(m *internalv1.PresenceEntry) { m.SessionEpoch = 0 }},
		{"no device", func(m *internalv1.PresenceEntry) { m.DeviceId = "" }},
		{"device too long", func(m *internalv1.PresenceEntry) { m.DeviceId = strings.Repeat("d", 65) }},
		{"boot announcement with a session", func(m *internalv1.PresenceEntry) { m.UserId, m.TenantId = 0, nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := proto.Clone(good).(*internalv1.PresenceEntry)
			tc.edit(m)
			v, err := proto.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := Decode(v); !errors.Is(err, ErrRecord) {
				t.Fatalf("Decode = %v, want ErrRecord", err)
			}
		})
	}
	if _, _, err := Decode([]byte{0xff}); !errors.Is(err, ErrRecord) {
		t.Fatalf("garbage: %v", err)
	}
}
