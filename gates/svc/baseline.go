package svc

// A/B baselines are binaries built from older commits. They read the single-address backend
// variables the current services refuse as retired (ADR-0026), so the harness gives each binary
// the names it knows; this file is the only place those names may appear (services_test).

// backendAddrEnv is how the gateway finds the writer, MailboxNode and SessionProjection.
func (s *Set) backendAddrEnv() []string {
	a := s.Addrs
	if s.n > 1 || knows(s.bin, Gateway, "QIM_WRITER_ADDRS") { // NewInstances refused n > 1 for an old binary
		return []string{"QIM_WRITER_ADDRS=" + s.listenAddrs(Writer), "QIM_MAILBOX_ADDRS=" + s.listenAddrs(Mailbox),
			"QIM_SESSION_ADDRS=" + s.listenAddrs(Session)}
	}
	return []string{"QIM_WRITER_ADDR=" + a.Writer, "QIM_MAILBOX_ADDR=" + a.Mailbox, "QIM_SESSION_ADDR=" + a.Session}
}
