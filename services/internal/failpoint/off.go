//go:build !failpoints

package failpoint

import "time"

// Enabled reports whether this binary was built with failpoints.
const Enabled = false

// Hit does nothing in a normal build.
func Hit(string) {}

// Armed reports whether name is the armed failpoint; always false in a normal build.
func Armed(string) bool { return false }

// Now is time.Now in a normal build; the failpoint build can step it (clock_on.go).
func Now() time.Time { return time.Now() }
