package e2e

import "testing"

// TestProductScenarios runs the product-surface scenarios (rate limits, hooks, …) on a fresh
// stack; E2E_PRODUCT=2 puts a flooder's two devices on two gateways:
//
//	E2E_PRODUCT=1 go test ./gates/e2e -run ProductScenarios -v -timeout 20m
func TestProductScenarios(t *testing.T) { runFresh(t, "E2E_PRODUCT", ProductScenarios()) }
