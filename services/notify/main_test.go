package notify

import (
	"os"
	"testing"

	"github.com/qim-dev/qim/gates/itest"
)

func TestMain(m *testing.M) { os.Exit(itest.Main(m)) }
