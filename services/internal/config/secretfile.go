package config

import (
	"fmt"
	"os"
	"strings"
)

// FileSuffix names the companion of every secret variable: QIM_X_FILE holds the path of a file
// whose content is QIM_X. Orchestrators mount secrets as files (Docker and Kubernetes secrets),
// and a value in a file stays out of `ps e`, /proc/<pid>/environ and the environment the
// process hands its children. The convention is per secret, not opt-in, so every secret a
// service gains can be mounted the same way without a second declaration.
const FileSuffix = "_FILE"

// fileVar describes the companion QIM_X_FILE of the secret variable v.
func fileVar(v Var) Var {
	return Var{Name: v.Name + FileSuffix, Type: "file",
		Doc: "file holding " + v.Name + " (one trailing newline is dropped); set this or " + v.Name + ", not both"}
}

// lookupField returns the raw value of f: its variable, or for a secret the content of the file
// its QIM_X_FILE names. Both set is an error rather than a precedence rule: an operator who
// rotates one and forgets the other would otherwise run on the stale value without a word.
// An empty QIM_X_FILE counts as unset, like an empty secret.
func lookupField(f field, lookup Lookup) (string, bool, *Error) {
	raw, ok := lookup(f.Name)
	if !f.Secret {
		return raw, ok, nil
	}
	fileName := f.Name + FileSuffix
	path, viaFile := lookup(fileName)
	if !viaFile || path == "" {
		return raw, ok, nil
	}
	if ok && raw != "" {
		return "", false, &Error{Var: fileName, Err: fmt.Errorf("%w (%s)", ErrConflict, f.Name)}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		// The path is not secret; the error names the file and why it could not be read.
		return "", false, &Error{Var: fileName, Value: path, Err: fmt.Errorf("%w: %v", ErrMalformed, err)}
	}
	s := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if s == "" {
		return "", false, &Error{Var: fileName, Value: path, Err: fmt.Errorf("%w: the file is empty", ErrMalformed)}
	}
	return s, true, nil
}

// checkUnique rejects a declaration whose variables repeat a name, such as a field tagged
// QIM_X_FILE next to a secret QIM_X (whose companion has that name).
func checkUnique(vars []Var) error {
	seen := make(map[string]bool, len(vars))
	for _, v := range vars {
		if seen[v.Name] {
			return fmt.Errorf("config: %s is declared twice (a secret's %s companion counts)", v.Name, FileSuffix)
		}
		seen[v.Name] = true
	}
	return nil
}
