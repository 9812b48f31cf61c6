package loadgen

import (
	"testing"

	"github.com/qim-dev/qim/contract"
)

// With several gateways, consecutive users (a 1:1 pair) dial different ones and every gateway
// gets users.
func TestUsersSpreadOverGateways(t *testing.T) {
	c := Config{Gateway: "g1:1", MoreGateways: []string{"g2:1", "g3:1"}}
	seen := map[string]int{}
	for u := contract.UserID(1); u <= 30; u++ {
		if u > 1 && c.gatewayOf(u) == c.gatewayOf(u-1) {
			t.Fatalf("users %d and %d share %s", u-1, u, c.gatewayOf(u))
		}
		seen[c.gatewayOf(u)]++
	}
	if len(seen) != 3 || seen["g1:1"] != 10 {
		t.Fatalf("spread %v", seen)
	}
	if one := (Config{Gateway: "g1:1"}); one.gatewayOf(7) != "g1:1" {
		t.Fatal("one gateway: every user on it")
	}
}
