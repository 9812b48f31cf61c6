package svc

// A/B baselines are binaries built from older commits. They read the single-address backend
// variables the current services refuse as retired (ADR-0026), so the harness gives each binary
// the names it knows; this file is the only place those names may appear (services_test).

// baselineEnv rewrites a process's variables for a binary that predates some of them: a
// deployment of one instance leaves the shard ranges to the services' default (every shard), a
// gateway from before the PresenceDirectory gets no advertised Push address and every process
// the one Push address instead, and a gateway from before several instances finds each backend
// by the single-address names.
func (s *Set) baselineEnv(vars map[string]string) {
	if s.n == 1 {
		delete(vars, "QIM_MAILBOX_OWNED_SHARDS")
		delete(vars, "QIM_SESSION_OWNED_SHARDS")
	}
	if !s.Rooms() {
		delete(vars, "QIM_ROOM_ADDRS")
	}
	if !knowsPresence(s.bin) {
		delete(vars, "QIM_GATEWAY_PUSH_ADVERTISE")
		vars["QIM_GATEWAY_PUSH_ADDR"] = s.Addrs.GatewayPush
	}
	if _, gateway := vars["QIM_WRITER_ADDRS"]; !gateway || s.n > 1 || knows(s.bin, Gateway, "QIM_WRITER_ADDRS") {
		return // NewInstances refused n > 1 for an old binary
	}
	for _, b := range [][2]string{{"QIM_WRITER_ADDRS", "QIM_WRITER_ADDR"}, {"QIM_MAILBOX_ADDRS", "QIM_MAILBOX_ADDR"},
		{"QIM_SESSION_ADDRS", "QIM_SESSION_ADDR"}} {
		vars[b[1]] = vars[b[0]]
		delete(vars, b[0])
	}
}
