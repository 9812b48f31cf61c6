package svc_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/qim-dev/qim/gates/stack"
	"github.com/qim-dev/qim/gates/svc"
)

// The HistoryArchiver belongs to a deployment exactly when the stack has a CQL node, and only
// then do the services get the archive's variables.
func TestServicesIncludeTheArchiverOnlyWithACQLNode(t *testing.T) {
	for _, cql := range []string{"", "127.0.0.1:9042"} {
		set, err := svc.New("qim", stack.Endpoints{Dir: t.TempDir(), CQL: cql})
		if err != nil {
			t.Fatal(err)
		}
		names, env := set.Services(), strings.Join(set.Env(svc.Writer), " ")
		withArchiver := slices.Contains(names, svc.Archiver)
		if withArchiver != (cql != "") || !slices.Equal(names[:len(svc.Order)], svc.Order) {
			t.Errorf("CQL %q: services %v", cql, names)
		}
		if strings.Contains(env, "QIM_CQL_HOSTS=") != (cql != "") || (cql != "" && set.Addrs.Metrics[svc.Archiver] == "") {
			t.Errorf("CQL %q: env %s, archiver metrics %q", cql, env, set.Addrs.Metrics[svc.Archiver])
		}
	}
}
