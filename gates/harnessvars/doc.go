// Package harnessvars documents the QIM_* variables of the test harness, its scripts and its
// tests, and holds the repository-wide check that every QIM_* name is documented somewhere: a
// product variable in services (docs/config.md) or a harness variable here
// (docs/harness-variables.md).
//
// Why apart from services: the product must not carry the harness. The services' environment
// check refuses QIM_* names no Q-IM program reads; it used to list the harness's too, because
// gates/svc passed its whole environment to every service. The harness now gives each child an
// explicit environment (gates/proc), so the product knows only its own names.
package harnessvars

import (
	"fmt"
	"strings"
)

// Markdown renders docs/harness-variables.md.
func Markdown() string {
	var b strings.Builder
	b.WriteString("# Harness variables\n\n")
	b.WriteString("Generated from `gates/harnessvars.Vars` by `go test ./gates/harnessvars -run TestDoc -update`; do not edit.\n\n")
	b.WriteString("The test harness (`qim-gate`, the integration tests, the scripts) reads these. No Q-IM service does:\n")
	b.WriteString("the harness starts every service with an explicit environment, and a service refuses a `QIM_*`\n")
	b.WriteString("variable it does not read. The services' variables are in [config.md](config.md).\n\n")
	b.WriteString("| variable | default | read by | meaning |\n| --- | --- | --- | --- |\n")
	for _, v := range Vars {
		def := "—"
		if v.Default != "" {
			def = "`" + v.Default + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", v.Name, def, v.ReadBy, v.Doc)
	}
	return b.String()
}
