package services

import (
	"fmt"
	"strings"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/config"
)

// ConfigDoc renders docs/config.md from the services' Config structs and the tool list.
func ConfigDoc() string {
	var b strings.Builder
	b.WriteString(`# Configuration reference

Generated from the services' Config structs by ` + "`go test ./services -run TestConfigDoc -update`" + `; do not edit.
` + "`qim <service> --help`" + ` prints the same list for one service.

Every service is configured only by ` + "`QIM_*`" + ` environment variables. Durations are Go durations
(` + "`250ms`, `5s`, `1m`" + `); lists are comma-separated; booleans are ` + "`true`/`false`" + ` (or ` + "`1`/`0`" + `).
A malformed value, an explicit zero where the default is not zero, or a ` + "`QIM_*`" + ` variable that no
Q-IM program reads refuses to start the process with an error naming the variable. Several services
read the same variable (` + "`QIM_REDIS_ADDR`, `QIM_KAFKA_BROKERS`" + `, …): one environment can configure
them all (` + "`qim all`" + ` relies on that).

At start-up a service checks its stores before it serves. A store that does not answer, or
answers that it cannot serve yet (no broker listed while the controller fences it, a partition
without a leader, Redis LOADING), is retried with backoff for at most ` + contract.StartupDependencyWait.String() + `
(` + "`contract.StartupDependencyWait`" + `); meanwhile ` + "`/healthz`" + ` answers 503 naming what it waits for,
and the log says so once, every 10 s after, and once it answered. A configuration the deployment must
fix (a missing topic, a wrong partition count, a Redis that is not durable enough, a refused
password) exits at once. Services can therefore be started in any order
([ADR-0030](adr/0030-start-up-rides-out-an-unreachable-broker.md)).
`)
	for _, p := range programs() {
		fmt.Fprintf(&b, "\n## %s (`qim %s`)\n\n%s\n\n%s", p.entity, p.name, oneLine(p.long), config.Markdown(p.vars))
	}
	b.WriteString("\n## Read by the failpoint build and the product's tools\n\nNot read by the services' configuration; known to the environment check. " +
		"The test harness's own variables are in [harness-variables.md](harness-variables.md): the harness never passes them to a service, which refuses them.\n\n")
	b.WriteString("| variable | default | read by | meaning |\n| --- | --- | --- | --- |\n")
	for _, t := range toolVars {
		def := "—"
		if t.Default != "" {
			def = "`" + t.Default + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", t.Name, def, t.readBy, t.Doc)
	}
	b.WriteString("\n## Renamed\n\nThese names are refused with a pointer to their replacement.\n\n| old | now |\n| --- | --- |\n")
	for _, old := range sortedKeys(renamed) {
		fmt.Fprintf(&b, "| `%s` | %s |\n", old, renamed[old])
	}
	return b.String()
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

// ServiceVariable is one variable a service reads: what deployment descriptions are checked
// against (compose.integration.yml's test).
type ServiceVariable struct {
	Name     string
	Required bool
}

// Variables lists the variables the service (its qim subcommand name) reads, or nil for a name
// that is no service.
func Variables(service string) []ServiceVariable {
	for _, p := range programs() {
		if p.name != service {
			continue
		}
		out := make([]ServiceVariable, len(p.vars))
		for i, v := range p.vars {
			out[i] = ServiceVariable{Name: v.Name, Required: v.Required}
		}
		return out
	}
	return nil
}
