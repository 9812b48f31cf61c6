//go:build !failpoints

package failpoint

// Enabled reports whether this binary was built with failpoints.
const Enabled = false

// Hit does nothing in a normal build.
func Hit(string) {}

// Armed reports whether name is the armed failpoint; always false in a normal build.
func Armed(string) bool { return false }
