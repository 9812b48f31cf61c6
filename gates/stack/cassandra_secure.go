package stack

import (
	"context"
	"fmt"
	"strings"
)

// cassandraSecureYAML is appended to cassandra.yaml for a secure stack: PasswordAuthenticator
// (roles in system_auth, checked on every connection) and client encryption required on the
// native port, with the PEM key store (PEMBasedSslContextFactory: no JKS, no keytool).
// Internode encryption stays off: one node has no peer.
func (s *processStack) cassandraSecureYAML() string {
	if s.sec == nil {
		return ""
	}
	return fmt.Sprintf(`authenticator: PasswordAuthenticator
client_encryption_options:
  enabled: true
  optional: false
  require_client_auth: false
  keystore: %s
  ssl_context_factory:
    class_name: org.apache.cassandra.security.PEMBasedSslContextFactory
`, tlsFiles(s.dir).keystoreFile)
}

// defaultSuperuser is the role Cassandra creates on first start with PasswordAuthenticator.
const defaultSuperuser = "cassandra"

// provisionCQLRole makes sure the stack's role exists: when it cannot log in yet, it logs in as
// the default superuser cassandra/cassandra, creates the role (superuser, login, the password of
// CQLPasswordFile) and changes the default superuser's password to a random one nobody keeps,
// so the well-known login stops working. It is idempotent: after a restart, or when a previous
// probe got halfway, the first login already succeeds or CREATE ROLE IF NOT EXISTS is a no-op.
func (s *processStack) provisionCQLRole(ctx context.Context, addr string) error {
	if s.sec == nil {
		return nil
	}
	pw, err := ReadPassword(s.sec.CQLPasswordFile)
	if err != nil {
		return misconf("%v", err)
	}
	if err := cqlLoginOnly(ctx, addr, s.sec, s.sec.CQLUser, pw); err == nil {
		return nil
	}
	c, err := CQLCluster(addr)
	if err != nil {
		return misconf("bad CQL address %q: %v", addr, err)
	}
	if err := s.sec.cqlLogin(c, defaultSuperuser, defaultSuperuser); err != nil {
		return misconf("%v", err)
	}
	sess, err := c.CreateSession()
	if err != nil {
		// Usually "Provided username cassandra and/or password are incorrect" until the
		// superuser exists.
		return fmt.Errorf("log in as the default superuser at %s: %w", addr, err)
	}
	defer sess.Close()
	stmts := []string{
		fmt.Sprintf(`CREATE ROLE IF NOT EXISTS %s WITH PASSWORD = '%s' AND LOGIN = true AND SUPERUSER = true`, s.sec.CQLUser, pw),
		fmt.Sprintf(`ALTER ROLE %s WITH PASSWORD = '%s'`, defaultSuperuser, randomPassword()),
	}
	for _, q := range stmts {
		if err := sess.Query(q).WithContext(ctx).Exec(); err != nil {
			verb, _, _ := strings.Cut(q, " WITH") // never the statement: it holds a password
			return fmt.Errorf("%s on %s: %w", verb, addr, err)
		}
	}
	return nil
}

// cqlLoginOnly opens and closes a session as user.
func cqlLoginOnly(ctx context.Context, addr string, sec *SecureEndpoints, user, pw string) error {
	c, err := CQLCluster(addr)
	if err != nil {
		return err
	}
	if err := sec.cqlLogin(c, user, pw); err != nil {
		return err
	}
	sess, err := c.CreateSession()
	if err != nil {
		return err
	}
	sess.Close()
	return ctx.Err()
}
