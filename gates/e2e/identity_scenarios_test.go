package e2e

import "testing"

// TestIdentityScenarios runs the JWT scenarios on a fresh stack (the developer loop; gate 4 runs
// them with every other scenario); E2E_IDENTITY=2 gives two gateways, so a key rotation must cost
// one JWKS fetch each:
//
//	E2E_IDENTITY=1 go test ./gates/e2e -run IdentityScenarios -v -timeout 20m
func TestIdentityScenarios(t *testing.T) { runFresh(t, "E2E_IDENTITY", IdentityScenarios()) }
