package luascripttest

import (
	"strings"
	"testing"
	"time"
)

func TestDiff(t *testing.T) {
	a := Key{Name: "a", Type: "string", Value: `["1"]`, ExpireAtMs: -1}
	b := Key{Name: "b", Type: "hash", Value: `["f"="v"]`, ExpireAtMs: 10_000}
	with := func(k Key, f func(*Key)) Key { f(&k); return k }
	cases := []struct {
		name      string
		want, got Keyspace
		diff      []string // prefixes of the lines, in order
	}{
		{"equal", Keyspace{a, b}, Keyspace{a, b}, nil},
		{"both empty", nil, nil, nil},
		{"missing", Keyspace{a, b}, Keyspace{b}, []string{"- a "}},
		{"extra", Keyspace{b}, Keyspace{a, b}, []string{"+ a "}},
		{"value", Keyspace{a}, Keyspace{with(a, func(k *Key) { k.Value = `["2"]` })}, []string{"~ a"}},
		{"type", Keyspace{a}, Keyspace{with(a, func(k *Key) { k.Type = "list" })}, []string{"~ a"}},
		{"expiry gained", Keyspace{a}, Keyspace{with(a, func(k *Key) { k.ExpireAtMs = 5 })}, []string{"~ a"}},
		{"expiry lost", Keyspace{b}, Keyspace{with(b, func(k *Key) { k.ExpireAtMs = -1 })}, []string{"~ b"}},
		{"expiry within tolerance", Keyspace{b}, Keyspace{with(b, func(k *Key) { k.ExpireAtMs = 11_000 })}, nil},
		{"expiry beyond tolerance", Keyspace{b}, Keyspace{with(b, func(k *Key) { k.ExpireAtMs = 11_001 })}, []string{"~ b"}},
		{"disjoint", Keyspace{a}, Keyspace{b}, []string{"- a ", "+ b "}},
	}
	for _, c := range cases {
		d := Diff(c.want, c.got, time.Second)
		ok := len(d) == len(c.diff)
		for i := 0; ok && i < len(d); i++ {
			ok = strings.HasPrefix(d[i], c.diff[i])
		}
		if !ok {
			t.Errorf("%s: Diff = %q, want lines starting %q", c.name, d, c.diff)
		}
	}
}
