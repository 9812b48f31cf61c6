package lint

import (
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// env is what every check sees: the root, the file list and caches shared between rules so each
// file is read and parsed once per run.
type env struct {
	root   string
	opts   Options
	out    io.Writer
	files  []string // slash paths relative to root, sorted
	allow  *allowlist
	ran    map[string]bool // checks that ran, so the allowlist only judges entries they could use
	data   map[string][]byte
	parsed map[string]*goFile
}

// goFile is one parsed Go file; err is set (and file may be partial) when it does not parse.
type goFile struct {
	path string
	fset *token.FileSet
	file *ast.File
	err  error
}

func newEnv(ctx context.Context, opts Options) (*env, error) {
	root, err := resolveRoot(opts.Root)
	if err != nil {
		return nil, err
	}
	files, err := listFiles(ctx, root)
	if err != nil {
		return nil, err
	}
	out := opts.Out
	if out == nil {
		out = io.Discard
	}
	e := &env{root: root, opts: opts, out: out, files: files, ran: map[string]bool{},
		data: map[string][]byte{}, parsed: map[string]*goFile{}}
	e.allow = loadAllowlist(root)
	return e, nil
}

// listFiles returns the files git would track (tracked plus untracked-but-not-ignored, because a
// new file violates the contract before its first commit). Outside a git work tree, as in tests
// run in temp dirs, it walks the directory instead.
func listFiles(ctx context.Context, root string) ([]string, error) {
	cmd := exec.CommandContext(ctx, "git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Run(); err != nil {
		return walkFiles(root)
	}
	var files []string
	for _, p := range strings.Split(stdout.String(), "\x00") {
		// ls-files still lists files deleted from the work tree until the deletion is staged.
		if p != "" && isRegular(filepath.Join(root, filepath.FromSlash(p))) {
			files = append(files, p)
		}
	}
	sort.Strings(files)
	return files, nil
}

// walkSkipDirs are never listed in walk mode: VCS data and the build, cache and report output
// directories that .gitignore excludes in a real checkout.
var walkSkipDirs = map[string]bool{".git": true, ".cache": true, "bin": true, "out": true,
	"reports": true, "node_modules": true}

func walkFiles(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && walkSkipDirs[d.Name()] {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			rel, relErr := filepath.Rel(root, p)
			if relErr != nil {
				return relErr
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("lint: list files: %w", err)
	}
	sort.Strings(files)
	return files, nil
}

func isRegular(p string) bool {
	info, err := os.Lstat(p)
	return err == nil && info.Mode().IsRegular()
}

// read returns a file's bytes, cached for the run.
func (e *env) read(p string) ([]byte, error) {
	if b, ok := e.data[p]; ok {
		return b, nil
	}
	b, err := os.ReadFile(filepath.Join(e.root, filepath.FromSlash(p)))
	if err != nil {
		return nil, fmt.Errorf("lint: %w", err)
	}
	e.data[p] = b
	return b, nil
}

// goFiles returns the parsed Go files accepted by keep, in path order. Files under testdata/ and
// vendor/ are never included: the go tool ignores them and fixtures there may be broken on purpose.
func (e *env) goFiles(keep func(p string) bool) []*goFile {
	var out []*goFile
	for _, p := range e.files {
		if !isGoSource(p) || !keep(p) {
			continue
		}
		out = append(out, e.parse(p))
	}
	return out
}

func (e *env) parse(p string) *goFile {
	if gf, ok := e.parsed[p]; ok {
		return gf
	}
	gf := &goFile{path: p, fset: token.NewFileSet()}
	src, err := e.read(p)
	if err == nil {
		gf.file, err = parser.ParseFile(gf.fset, p, src, parser.ParseComments|parser.SkipObjectResolution)
	}
	gf.err = err
	e.parsed[p] = gf
	return gf
}

// generated reports whether the file carries the standard "Code generated ... DO NOT EDIT." header.
func (gf *goFile) generated() bool { return gf.file != nil && ast.IsGenerated(gf.file) }

// line is the 1-based line of pos.
func (gf *goFile) line(pos token.Pos) int { return gf.fset.Position(pos).Line }

// parseFinding turns a parse failure into a finding: a rule that cannot read a file cannot vouch
// for it, so the file fails the rule instead of passing unseen.
func (gf *goFile) parseFinding(rule string) Finding {
	return Finding{File: gf.path, Line: 0, Rule: rule, Text: "cannot parse: " + gf.err.Error()}
}

func (e *env) progressf(format string, args ...any) {
	// Progress is best effort; a broken progress writer must not change the verdict.
	_, _ = fmt.Fprintf(e.out, format+"\n", args...)
}

func isGoSource(p string) bool {
	return strings.HasSuffix(p, ".go") && !hasSegment(p, "testdata") && !hasSegment(p, "vendor")
}

func isTest(p string) bool { return strings.HasSuffix(p, "_test.go") }

// isDoc is the contract's definition of documentation: Markdown anywhere and everything in docs/.
// Docs may name retired terms (to say what replaced them); code and config may not.
func isDoc(p string) bool {
	return strings.HasSuffix(strings.ToLower(p), ".md") || under(p, "docs")
}

// under reports whether slash path p lies inside top-level directory dir.
func under(p, dir string) bool { return strings.HasPrefix(p, dir+"/") }

func underAny(p string, dirs ...string) bool {
	for _, d := range dirs {
		if under(p, d) {
			return true
		}
	}
	return false
}

func hasSegment(p, seg string) bool {
	return strings.HasPrefix(p, seg+"/") || strings.Contains(p, "/"+seg+"/")
}

// isBinary uses git's heuristic: a NUL byte in the first 8000 bytes.
func isBinary(b []byte) bool {
	if len(b) > 8000 {
		b = b[:8000]
	}
	return bytes.IndexByte(b, 0) >= 0
}
