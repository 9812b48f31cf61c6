package harnessvars

import "github.com/qim-dev/qim/services"

// CheckEnviron refuses QIM_* variables that neither the product nor the harness reads: the
// harness's binaries (qim-gate, qim-loadgen, qim-lint) run with cmdline.RefuseUnknownEnv of it,
// as the product's run with services.CheckEnviron, so a typo is refused by every binary.
func CheckEnviron(environ []string) error {
	names := make([]string, len(Vars))
	for i, v := range Vars {
		names[i] = v.Name
	}
	return services.CheckEnvironAlso(environ, names)
}
