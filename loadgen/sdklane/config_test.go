package sdklane

import (
	"os"
	"strings"
	"testing"
)

// The default store directory is tmpfs when the machine has a usable /dev/shm, so the lane's
// fsyncs stay off the stack's disk; otherwise the temp dir. An explicit Dir is kept.
func TestConfigDirDefault(t *testing.T) {
	want := os.TempDir()
	if p, err := os.MkdirTemp(shmDir, "qim-test-"); err == nil {
		_ = os.Remove(p)
		want = shmDir
	}
	var c Config
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Dir != want {
		t.Fatalf("default Dir %q, want %q", c.Dir, want)
	}
	dir := t.TempDir()
	c = Config{Dir: dir}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Dir != dir {
		t.Fatalf("explicit Dir %q became %q", dir, c.Dir)
	}
	left, _ := os.ReadDir(shmDir)
	for _, e := range left {
		if strings.HasPrefix(e.Name(), "qim-sdklane-probe-") {
			t.Fatalf("the probe directory %s was left behind", e.Name())
		}
	}
}
