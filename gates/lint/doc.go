// Package lint owns Q-IM's contract lint: the named checks that gate 1 (`qim-gate`) and
// `qim-lint` run over a checkout, and the Report they produce.
//
// Checks: gofmt, vet, golangci (tool runs) and aliases, cql-delete, unread-subtraction,
// contract-constants, secret-logging (source rules, listed in rules.go; each rule's check function
// documents why the rule exists and its false-positive policy), plus allowlist, which validates
// gates/lint/allow.txt, the only place exceptions may be granted.
//
// What lint must never do: modify the files it judges (other engineers work in the same checkout,
// and a gate that rewrites code would hide the very diff it should fail; installing golangci-lint
// into the git-ignored bin/ is its only write); pass a check it could not run (a missing tool, an
// unreadable file or a parse error is a finding, never a pass); or grant exceptions in code (an
// exception lives in allow.txt with its reason, where review sees it).
//
// The lint's own source and tests contain the patterns it forbids only as concatenated parts
// (for example "Message"+"Node"), so the lint passes over its own package without exempting it.
package lint
