package storeauth

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/qim-dev/qim/services/internal/config"
)

// clientTLS builds the client side of one store's TLS (caVar and nameVar are the names of its
// CA and server name variables, for errors) after the store's other problems bad, and returns bad with its own added. Only the CAs of
// caFile are trusted, not the system pool: a store's CA is the deployment's own, and trusting
// every public CA as well would let any certificate for the name pass. TLS 1.2 at least. nil
// without a CA. The file is read on every call, so a client built after a rotation gets the
// new CA.
func clientTLS(caVar, nameVar, caFile, serverName string, bad config.Errors) (*tls.Config, config.Errors) {
	if caFile == "" {
		if serverName != "" {
			bad = append(bad, &config.Error{Var: caVar, Err: fmt.Errorf("%w when %s is set (TLS is on only with a CA)", config.ErrRequired, nameVar)})
		}
		return nil, bad
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, append(bad, &config.Error{Var: caVar, Value: caFile, Err: fmt.Errorf("%w: %v", config.ErrMalformed, err)})
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, append(bad, &config.Error{Var: caVar, Value: caFile, Err: fmt.Errorf("%w: no PEM certificate in the file", config.ErrMalformed)})
	}
	if len(bad) > 0 {
		return nil, bad
	}
	return &tls.Config{RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS12}, nil
}
