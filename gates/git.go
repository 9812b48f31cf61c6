package gates

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// Git runs git with args in dir and returns its trimmed output; a failure carries git's own
// words. The A/B run checks out commits with it, the chaos gate names the tree it ran on.
func Git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}
