package services

import "github.com/qim-dev/qim/services/internal/config"

// toolVar is a QIM_* variable of the product read by something other than a service's Config:
// the failpoint build of the services and the product's client tools. They are listed here so
// the environment check knows them and docs/config.md documents them. The test harness's own
// variables are not here: the harness documents them (gates/harnessvars) and never passes them
// to a service, which refuses them like any other unknown QIM_* name.
type toolVar struct {
	config.Var
	readBy string
}

// toolVars lists the product's QIM_* names that no Config declares; gates/harnessvars'
// TestEveryVariableIsDocumented scans the repository and fails on a name neither list has.
var toolVars = []toolVar{
	{config.Var{Name: "QIM_FAILPOINT", Type: "string", Doc: "failpoint to arm (crash tests); only in binaries built with -tags failpoints"}, "services (failpoints build)"},
	{config.Var{Name: "QIM_FAILPOINT_SKIP", Type: "int", Default: "0", Doc: "hits of the armed failpoint to pass before it fires"}, "services (failpoints build)"},
	{config.Var{Name: "QIM_FAILPOINT_ARM", Type: "string", Doc: "\"signal\": the armed failpoint stays dormant until the process gets SIGUSR1 (the chaos matrix fires it mid-load)"}, "services (failpoints build)"},
	{config.Var{Name: "QIM_FAILPOINT_ACTION", Type: "string", Doc: "what the live failpoint does: \"kill\" (default) SIGKILLs the process, \"term\" SIGTERMs it once and lets the path go on (a graceful stop mid-batch)"}, "services (failpoints build)"},
	{config.Var{Name: "QIM_FAILPOINT_CLOCK_STEPS", Type: "string", Doc: "wall-clock steps, comma-separated durations (\"-10s,+10m\"): each SIGUSR2 applies the next to the clock the writer's HLC, committed_at and trim read (the chaos matrix's clock cells)"}, "writer (failpoints build)"},
	{config.Var{Name: "QIM_TOKEN", Type: "secret", Secret: true, Doc: "a client's access token (instead of --token-file)"}, "qim-desktop"},
	{config.Var{Name: "QIM_GATEWAY", Type: "string", Doc: "gateway address written by the desktop dev deployment for the tmux demo"}, "scripts/desktop-tmux.sh, qim-desktop devdeploy"},
}

// renamed names retired variables and what replaced them, so the environment check can say so.
var renamed = map[string]string{
	"QIM_HEARTBEAT_MS":               "renamed to QIM_HEARTBEAT_INTERVAL, a Go duration such as 60s",
	"QIM_HEARTBEAT_TIMEOUT_MS":       "renamed to QIM_HEARTBEAT_TIMEOUT, a Go duration such as 150s",
	"QIM_GATEWAY_AUTH_TIMEOUT_MS":    "renamed to QIM_GATEWAY_AUTH_TIMEOUT, a Go duration such as 10s",
	"QIM_GATEWAY_BACKEND_TIMEOUT_MS": "renamed to QIM_GATEWAY_BACKEND_TIMEOUT, a Go duration such as 5s",
	"QIM_GATEWAY_WRITE_TIMEOUT_MS":   "renamed to QIM_GATEWAY_WRITE_TIMEOUT, a Go duration such as 10s",
	"QIM_WRITER_ADDR":                "renamed to QIM_WRITER_ADDRS, a comma-separated list of writer addresses (one is a list of one)",
	"QIM_MAILBOX_ADDR":               "renamed to QIM_MAILBOX_ADDRS, a comma-separated list of MailboxNode addresses (one is a list of one)",
	"QIM_SESSION_ADDR":               "renamed to QIM_SESSION_ADDRS, a comma-separated list of SessionProjection addresses (one is a list of one)",
	"QIM_FANOUT_PRODUCER_IDEMPOTENCE": "renamed: set QIM_FANOUT_DISABLE_PRODUCER_IDEMPOTENCE=true to turn idempotence off; " +
		"unset it to keep it on",
}

// VariableNames is every QIM_* name a Q-IM program reads: the services' Configs and toolVars.
func VariableNames() map[string]bool {
	out := map[string]bool{}
	for _, v := range knownVars() {
		out[v.Name] = true
	}
	return out
}

// RenamedVariables maps each retired name to what replaced it.
func RenamedVariables() map[string]string {
	out := make(map[string]string, len(renamed))
	for k, v := range renamed {
		out[k] = v
	}
	return out
}
