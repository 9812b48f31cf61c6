package harnessvars

import (
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/qim-dev/qim/services"
)

var update = flag.Bool("update", false, "rewrite docs/harness-variables.md")

const docPath = "../../docs/harness-variables.md"

// TestDoc: docs/harness-variables.md is Markdown() (run with -update after changing Vars).
func TestDoc(t *testing.T) {
	want := Markdown()
	if *update {
		if err := os.WriteFile(docPath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(docPath)
	if err != nil || string(got) != want {
		t.Fatalf("%s is stale: run go test ./gates/harnessvars -run TestDoc -update (%v)", docPath, err)
	}
}

// TestNoHarnessVariableReachesTheProduct: no harness variable is one the product knows, and
// the services refuse each of them, so only the harness's explicit child environments keep
// them away from a service.
func TestNoHarnessVariableReachesTheProduct(t *testing.T) {
	product := services.VariableNames()
	for _, v := range Vars {
		if product[v.Name] {
			t.Errorf("%s is listed by the harness and known to the product", v.Name)
		}
		if err := services.CheckEnviron([]string{v.Name + "=1"}); err == nil {
			t.Errorf("the services accept the harness's %s", v.Name)
		}
	}
}

// baselineEnvFile is the one file allowed to use retired variable names: the harness's environment
// for binaries built before they were renamed (an A/B baseline).
var baselineEnvFile = filepath.Join("gates", "svc", "baseline.go")

// TestEveryVariableIsDocumented scans the repository's code and scripts: every QIM_* name must
// be a product variable (services) or a harness variable (Vars), and no code may still use a
// renamed one.
func TestEveryVariableIsDocumented(t *testing.T) {
	known := services.VariableNames()
	for _, v := range Vars {
		known[v.Name] = true
	}
	renamed := services.RenamedVariables()
	name := regexp.MustCompile(`QIM_[A-Z0-9_]*[A-Z0-9]`)
	root := filepath.Join("..", "..")
	for _, n := range cABINames(t, filepath.Join(root, "sdk", "capi", "qim.h")) {
		known[n] = true // constants of the C ABI (QIM_OK, QIM_E_*), named in its Go side too
	}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch rel {
			case ".git", "bin", "out", "docs", filepath.Join("services", "internal", "config"):
				return filepath.SkipDir
			}
			return nil
		}
		base := d.Name()
		scanned := strings.HasSuffix(base, ".go") || strings.HasSuffix(base, ".sh") || strings.HasSuffix(base, ".yml") ||
			base == "Makefile" || strings.HasPrefix(rel, ".ci"+string(filepath.Separator))
		if !scanned || strings.HasSuffix(base, ".pb.go") || filepath.Dir(rel) == "services" || filepath.Dir(rel) == filepath.Join("gates", "harnessvars") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, n := range name.FindAllString(string(src), -1) {
			switch {
			case renamed[n] != "" && rel == baselineEnvFile:
				// The harness starts A/B baselines built before the rename with the names they read.
			case renamed[n] != "":
				t.Errorf("%s uses the retired %s (%s)", rel, n, renamed[n])
			case !known[n]:
				t.Errorf("%s uses %s, which neither a service's Config, services' toolVars nor harnessvars.Vars lists", rel, n)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// cABINames lists the constants qim.h defines (#define QIM_… and the enum's QIM_… = n): C names
// of the SDK's C ABI, not environment variables. A variable could not take one of these names
// unnoticed: qim.h would then define it too, and a reader of the header would see the clash.
func cABINames(t *testing.T, path string) []string {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	def := regexp.MustCompile(`(?m)^(?:#define\s+|\s+)(QIM_[A-Z0-9_]+)(?:\s+\d+|\s*=\s*\d+,?)`)
	var out []string
	for _, m := range def.FindAllStringSubmatch(string(src), -1) {
		out = append(out, m[1])
	}
	if len(out) < 9 {
		t.Fatalf("%s defines %d QIM_ constants, want QIM_ABI_VERSION, QIM_OK and the 7 error codes: %v", path, len(out), out)
	}
	return out
}
