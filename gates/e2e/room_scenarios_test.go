package e2e

import "testing"

// TestRoomScenarios runs the room scenarios on a fresh stack (the developer loop; gate 4 runs
// them with every other scenario); E2E_ROOMS=2 gives two gateways and two RoomWriters:
//
//	E2E_ROOMS=1 go test ./gates/e2e -run RoomScenarios -v -timeout 20m
func TestRoomScenarios(t *testing.T) { runFresh(t, "E2E_ROOMS", RoomScenarios()) }
