package lint

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// toolResult is one external command's outcome. startErr is set when the command could not run
// at all (missing binary, cancelled context); exit is its status otherwise.
type toolResult struct {
	stdout, stderr string
	exit           int
	startErr       error
}

func runTool(ctx context.Context, dir string, extraEnv []string, name string, args ...string) toolResult {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), extraEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := toolResult{stdout: stdout.String(), stderr: stderr.String()}
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		res.exit = exitErr.ExitCode()
	case err != nil:
		res.startErr = err
	}
	return res
}

// toolFinding reports that a check's tool failed without producing findings: the check cannot
// vouch for the tree, so it fails with the tool's own last words.
func toolFinding(rule, what string, res toolResult) Finding {
	text := what
	if res.startErr != nil {
		text += ": " + res.startErr.Error()
	} else {
		text += " (exit " + strconv.Itoa(res.exit) + "): " + tail(res.stderr+res.stdout, 20)
	}
	return Finding{Rule: rule, Text: text}
}

// tail returns the last n non-empty lines of s, joined with " | " so a finding stays one line.
func tail(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	if len(lines) == 0 {
		return "no output"
	}
	return strings.Join(lines, " | ")
}

// diagLine matches a compiler-style diagnostic: path.go:line[:col]: message.
var diagLine = regexp.MustCompile(`^(?:vet: )?(\S+?\.go):(\d+)(?::\d+)?: (.*)$`)

// parseDiagnostics turns file:line:col: lines into findings with root-relative slash paths.
func parseDiagnostics(root, rule, output string) []Finding {
	var out []Finding
	for _, l := range strings.Split(output, "\n") {
		m := diagLine.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil {
			continue
		}
		line, _ := strconv.Atoi(m[2])
		out = append(out, Finding{File: relPath(root, m[1]), Line: line, Rule: rule, Text: m[3]})
	}
	return out
}

// relPath makes a tool's path (absolute, ./relative or relative to root) root-relative. Paths
// outside the root (a dependency in the module cache that fails to build) stay absolute, so the
// finding names the real file rather than a ../../ chain.
func relPath(root, p string) string {
	abs := filepath.FromSlash(p)
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(root, abs)
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return filepath.ToSlash(filepath.Clean(abs))
	}
	return filepath.ToSlash(rel)
}

// modulePattern is the package pattern of every module the root builds: "<module path>/...".
// Unlike "./...", which stops at a nested go.mod, it matches the client-library modules the root
// module requires and replaces with its own subdirectories (ADR-0031). A root whose module path
// cannot be read falls back to "./...", and the tool's own failure then says why.
func modulePattern(ctx context.Context, root string) string {
	res := runTool(ctx, root, nil, "go", "list", "-m", "-f", "{{.Path}}")
	path := strings.TrimSpace(res.stdout)
	if res.startErr != nil || res.exit != 0 || path == "" || strings.Contains(path, "\n") {
		return "./..."
	}
	return path + "/..."
}

// moduleDirs lists the root and every module the root replaces with a directory inside it (the
// client libraries, ADR-0031), for tools that lint one module per run.
func moduleDirs(ctx context.Context, root string) []string {
	dirs := []string{root}
	res := runTool(ctx, root, nil, "go", "list", "-m", "-f", "{{if .Replace}}{{.Replace.Dir}}{{end}}", "all")
	if res.startErr != nil || res.exit != 0 {
		return dirs // the root's own run reports what is wrong with it
	}
	for _, d := range strings.Fields(res.stdout) {
		if rel, err := filepath.Rel(root, d); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
			dirs = append(dirs, d)
		}
	}
	return dirs
}
