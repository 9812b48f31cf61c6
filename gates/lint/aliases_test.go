package lint

import "testing"

// The retired names are assembled from parts: this test file is itself scanned by the aliases
// rule when the lint runs over the repository.
var (
	aliasNode    = "Message" + "Node"
	aliasMailbox = "Mailbox" + " Node"
	aliasStore   = "Message" + " Store"
	aliasEpoch   = "connection" + "_epoch"
)

// TestAliasesAcceptance is the contract's acceptance test: a retired name in a non-doc file
// fails the run on the aliases rule at the right file and line; the same text in Markdown does not.
func TestAliasesAcceptance(t *testing.T) {
	root := writeTree(t, map[string]string{
		"services/router/node.go": "package router\n\n// routes to the " + aliasNode + "\ntype R struct{}\n",
		"README.md":               "The " + aliasNode + " was renamed.\n",
	})
	c := runCheck(t, root, "aliases")
	if c.Passed || len(c.Findings) != 1 {
		t.Fatalf("want one finding, got passed=%v findings=%+v", c.Passed, c.Findings)
	}
	f := c.Findings[0]
	if f.File != "services/router/node.go" || f.Line != 3 || f.Rule != "aliases" {
		t.Fatalf("finding = %+v, want services/router/node.go:3 rule aliases", f)
	}

	docOnly := writeTree(t, map[string]string{"README.md": "The " + aliasNode + " was renamed.\n"})
	if c := runCheck(t, docOnly, "aliases"); !c.Passed || len(c.Findings) != 0 {
		t.Fatalf("alias in *.md must not be a finding: %+v", c.Findings)
	}
}

func TestAliases(t *testing.T) {
	runRuleCases(t, "aliases", []ruleCase{
		{"go identifier", map[string]string{
			"services/a/a.go": "package a\n\ntype " + aliasNode + " struct{} // WANT\n",
		}},
		{"every retired name in config and scripts", map[string]string{
			"deploy/app.yml":          "name: gateway\nrole: " + aliasMailbox + " # WANT\n",
			"scripts/run.sh":          "#!/bin/sh\necho '" + aliasStore + "' # WANT\n",
			"proto/qim/v1/conn.proto": "message Conn {\n  uint64 " + aliasEpoch + " = 1; // WANT\n}\n",
			"Makefile":                "all:\n\t@echo " + aliasEpoch + " # WANT\n",
		}},
		{"two names on one line are two findings on that line", map[string]string{
			"services/a/a.lua": "-- " + aliasNode + " " + aliasStore + " WANT WANT\n",
		}},
		{"docs and markdown are exempt", map[string]string{
			"docs/adr/0001.txt": aliasNode + "\n",
			"services/NOTES.md": aliasStore + "\n",
			"CHANGELOG.MD":      aliasEpoch + "\n",
		}},
		{"near misses are clean", map[string]string{
			"services/a/a.go": "package a\n\n// the message store keeps bodies; MailboxNodes and MessageNo are other words\n" +
				"var connectionEpoch, mailbox_node = 1, 2\n",
		}},
		{"binary files are skipped", map[string]string{
			"assets/blob.bin": "\x00\x01" + aliasNode,
		}},
	})
}
