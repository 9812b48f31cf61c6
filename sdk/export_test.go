package sdk

import (
	"testing"

	"github.com/qim-dev/qim/gates/svc"
)

// Deployment exposes the package's service deployment to the external test package (the e2e
// scenarios import gates/e2e, which imports this package).
func Deployment(t *testing.T) *svc.Set { return deployment(t) }
