package lint

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// GolangciVersion is the pinned golangci-lint release; GolangciModule is what `go install` fetches.
const (
	GolangciVersion = "v2.15.0"
	GolangciModule  = "github.com/golangci/golangci-lint/v2/cmd/golangci-lint"
)

// checkGolangci runs `golangci-lint run ./...` with the root's .golangci.yml. The binary is taken
// from <root>/bin (where the pinned version is installed), else from PATH if it is a v2 release;
// otherwise it is installed into <root>/bin unless Options.NoInstall is set. A binary that cannot
// be found or installed fails the check with the command that fixes it: the staticcheck-class
// checks are part of the contract, so their absence is never a pass.
func checkGolangci(ctx context.Context, e *env) []Finding {
	bin, ok := findGolangci(ctx, e.root)
	if !ok {
		var failure string
		bin, failure = installGolangci(ctx, e)
		if failure != "" {
			return []Finding{{Rule: "golangci", Text: failure}}
		}
	}
	// golangci-lint lints one module per run (its patterns are directories, which stop at a
	// nested go.mod), so it runs in the root and in every client-library module (ADR-0031).
	var out []Finding
	for _, dir := range moduleDirs(ctx, e.root) {
		out = append(out, golangciModule(ctx, e.root, dir, bin)...)
	}
	return out
}

// golangciModule lints the module in dir.
func golangciModule(ctx context.Context, root, dir, bin string) []Finding {
	// --allow-parallel-runners: gates and engineers run the lint concurrently on one machine, and
	// golangci-lint's default is to refuse to start while another instance holds its lock.
	res := runTool(ctx, dir, nil, bin, "run", "--output.json.path=stdout", "--output.text.path=stderr",
		"--show-stats=false", "--allow-parallel-runners", "./...")
	if res.startErr != nil {
		return []Finding{toolFinding("golangci", "golangci-lint could not run in "+relPath(root, dir), res)}
	}
	// golangci-lint names files relative to its config file, the root's .golangci.yml.
	issues, err := parseGolangci(root, res.stdout)
	if err != nil || (res.exit != 0 && len(issues) == 0) {
		return []Finding{toolFinding("golangci", "golangci-lint failed in "+relPath(root, dir), res)}
	}
	return issues
}

func installCommand(root string) string {
	return "GOBIN=" + filepath.Join(root, "bin") + " go install " + GolangciModule + "@" + GolangciVersion
}

func findGolangci(ctx context.Context, root string) (string, bool) {
	local := filepath.Join(root, "bin", "golangci-lint")
	if isExecutable(local) {
		return local, true
	}
	path, err := exec.LookPath("golangci-lint")
	if err != nil {
		return "", false
	}
	// A v1 binary rejects the v2 config outright; treat it as absent rather than fail confusingly.
	res := runTool(ctx, root, nil, path, "version")
	if res.startErr != nil || !strings.Contains(res.stdout+res.stderr, "version 2.") {
		return "", false
	}
	return path, true
}

// installGolangci installs the pinned release into <root>/bin. It returns the binary, or a
// failure text naming the command that fixes it.
func installGolangci(ctx context.Context, e *env) (string, string) {
	fix := "install it with: " + installCommand(e.root)
	if e.opts.NoInstall {
		return "", "golangci-lint not found in " + filepath.Join(e.root, "bin") + " or on PATH and installing is disabled; " + fix
	}
	e.progressf("lint: golangci-lint not found; installing %s into %s (takes a few minutes)", GolangciVersion, filepath.Join(e.root, "bin"))
	res := runTool(ctx, e.root, []string{"GOBIN=" + filepath.Join(e.root, "bin")}, "go", "install", GolangciModule+"@"+GolangciVersion)
	bin := filepath.Join(e.root, "bin", "golangci-lint")
	if res.startErr != nil || res.exit != 0 || !isExecutable(bin) {
		return "", toolFinding("golangci", "golangci-lint install failed (no network or module proxy?); "+fix, res).Text
	}
	return bin, ""
}

// golangciOutput is the part of golangci-lint's JSON report the check uses.
type golangciOutput struct {
	Issues []struct {
		FromLinter string
		Text       string
		Pos        struct {
			Filename string
			Line     int
		}
	}
}

func parseGolangci(root, stdout string) ([]Finding, error) {
	var doc golangciOutput
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		return nil, err
	}
	out := make([]Finding, 0, len(doc.Issues))
	for _, is := range doc.Issues {
		text := strings.Join(strings.Fields(is.Text), " ") // one line per finding in every report
		if is.FromLinter == "typecheck" {
			// golangci-lint reports only compile errors while any exist, so say what is hidden.
			text = "does not compile (other golangci findings stay hidden until it does): " + text
		}
		out = append(out, Finding{File: relPath(root, is.Pos.Filename), Line: is.Pos.Line,
			Rule: "golangci/" + is.FromLinter, Text: text})
	}
	return out, nil
}

// isExecutable follows symlinks (bin/ may link to a shared install) and wants an executable file.
func isExecutable(p string) bool {
	info, err := os.Stat(p)
	return err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o111 != 0
}
