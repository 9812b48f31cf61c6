package svc

// A/B baselines are binaries built from older commits. They read the single-address backend
// variables the current services refuse as retired (ADR-0026), so the harness gives each binary
// the names it knows; this file is the only place those names may appear (services_test).

// backendAddrEnv is how the gateway finds the writer, MailboxNode and SessionProjection.
func (s *Set) backendAddrEnv() []string {
	a := s.Addrs
	if knows(s.bin, Gateway, "QIM_WRITER_ADDRS") {
		return []string{"QIM_WRITER_ADDRS=" + a.Writer, "QIM_MAILBOX_ADDRS=" + a.Mailbox, "QIM_SESSION_ADDRS=" + a.Session}
	}
	return []string{"QIM_WRITER_ADDR=" + a.Writer, "QIM_MAILBOX_ADDR=" + a.Mailbox, "QIM_SESSION_ADDR=" + a.Session}
}
