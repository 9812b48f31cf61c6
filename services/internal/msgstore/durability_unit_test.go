package msgstore

import (
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestVersionAtLeast(t *testing.T) {
	for v, want := range map[string]bool{
		"7.0.15": true, "7.2.4": true, "8.0.0": true, "10.1": true,
		"6.2.14": false, "6.9": false, "": false, "7": false, "x.y.z": false,
	} {
		if got := versionAtLeast(v, 7, 0); got != want {
			t.Errorf("versionAtLeast(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestIsLoopback(t *testing.T) {
	tests := []struct {
		opt  redis.Options
		want bool
	}{
		{redis.Options{Addr: "127.0.0.1:6379"}, true},
		{redis.Options{Addr: "127.9.9.9:6379"}, true},
		{redis.Options{Addr: "[::1]:6379"}, true},
		{redis.Options{Addr: "localhost:6379"}, true},
		{redis.Options{Network: "unix", Addr: "/run/redis.sock"}, true},
		{redis.Options{Addr: "10.0.0.5:6379"}, false},
		{redis.Options{Addr: "redis.internal:6379"}, false},
		{redis.Options{Addr: "0.0.0.0:6379"}, false},
		{redis.Options{Addr: "127.0.0.1"}, false},
	}
	for _, tc := range tests {
		if got := isLoopback(&tc.opt); got != tc.want {
			t.Errorf("isLoopback(%s %s) = %v, want %v", tc.opt.Network, tc.opt.Addr, got, tc.want)
		}
	}
}
