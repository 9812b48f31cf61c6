package gateway

import "github.com/qim-dev/qim/services/internal/config"

// Secret is the dev-token signing secret: printed, it yields its digest (config.Secret).
type Secret = config.Secret
