package stack

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestSmallDiskFillsAndFrees: a small disk takes writes, refuses them with ENOSPC once FillDisk
// returned, takes them again after FreeDisk, and is unmounted by unmountSmallDisks. A FillDisk
// that left room, or a FreeDisk that freed nothing, fails here.
func TestSmallDiskFillsAndFrees(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a small disk is a tmpfs mount: needs root")
	}
	dir := t.TempDir()
	s := &processStack{cfg: &config{smallDisks: map[string]int64{"x": 4 << 20}}, dir: dir}
	if err := s.mountSmallDisks(); err != nil {
		t.Skipf("no tmpfs mount here (a container without CAP_SYS_ADMIN?): %v", err)
	}
	t.Cleanup(func() {
		if err := s.unmountSmallDisks(); err != nil {
			t.Error(err)
		}
	})
	probe := filepath.Join(s.diskDir("x"), "probe")
	write := func() error { return os.WriteFile(probe, make([]byte, 64<<10), 0o600) }
	if err := write(); err != nil {
		t.Fatalf("before the fill: %v", err)
	}
	_ = os.Remove(probe)
	if err := s.FillDisk("x"); err != nil {
		t.Fatal(err)
	}
	if err := write(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("on the full disk: %v, want ENOSPC", err)
	}
	if err := s.FreeDisk("x"); err != nil {
		t.Fatal(err)
	}
	if err := write(); err != nil {
		t.Fatalf("after the free: %v", err)
	}
	if err := s.FillDisk("y"); !errors.Is(err, ErrNoSmallDisk) {
		t.Fatalf("a server without a small disk: %v, want ErrNoSmallDisk", err)
	}
}
