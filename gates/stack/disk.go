package stack

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
)

// Small disks (issue 42, item 4): the process provider can put one server's data directory on a
// tmpfs of a fixed size, so the chaos matrix can fill it (FillDisk) while the server runs and
// free it again (FreeDisk), the way a full volume and an operator's clean-up behave. A tmpfs
// needs root to mount; the chaos matrix asks for one only when a selected cell fills that disk.
//
// Rejected: RLIMIT_FSIZE on the server (EFBIG with SIGXFSZ, which kills the process, is not
// ENOSPC), and a loop-file filesystem (the same mount privilege, plus a mkfs and a file to
// clean up, for nothing a tmpfs lacks here: the faults are about ENOSPC, not about a device).

// WithSmallDisk puts server's data directory on a tmpfs of size bytes (process provider; needs
// root). Without it FillDisk refuses the server.
func WithSmallDisk(server string, size int64) Option {
	return func(c *config) {
		if c.smallDisks == nil {
			c.smallDisks = map[string]int64{}
		}
		c.smallDisks[server] = size
	}
}

// DiskFaults fill and free a server's small disk. The process provider implements it.
type DiskFaults interface {
	// FillDisk writes a filler file into the server's data directory until the filesystem has
	// no free block left, and returns once it is full.
	FillDisk(server string) error
	// FreeDisk removes the filler: the space is there again.
	FreeDisk(server string) error
}

var _ DiskFaults = (*processStack)(nil)

// ErrNoSmallDisk is wrapped when a disk fault names a server the stack gave no small disk.
var ErrNoSmallDisk = errors.New("stack: the server has no small disk (stack.WithSmallDisk)")

const fillerName = ".qim-disk-filler"

func (s *processStack) diskDir(server string) string { return filepath.Join(s.dir, "data", server) }

// mountSmallDisks mounts a tmpfs on each small disk's data directory before any server starts.
func (s *processStack) mountSmallDisks() error {
	for _, server := range slices.Sorted(maps.Keys(s.cfg.smallDisks)) {
		dir := s.diskDir(server)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		size := strconv.FormatInt(s.cfg.smallDisks[server], 10)
		out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "qim-"+server, dir).CombinedOutput()
		if err != nil {
			return fmt.Errorf("stack: a small disk for %s is a tmpfs mount, which needs root: mount: %v: %s", server, err, out)
		}
		s.mu.Lock()
		s.mounted = append(s.mounted, dir)
		s.mu.Unlock()
	}
	return nil
}

// unmountSmallDisks undoes mountSmallDisks, after the servers stopped.
func (s *processStack) unmountSmallDisks() error {
	s.mu.Lock()
	dirs := s.mounted
	s.mounted = nil
	s.mu.Unlock()
	var errs []error
	for _, dir := range dirs {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("stack: umount %s: %v: %s", dir, err, out))
		}
	}
	return errors.Join(errs...)
}

func (s *processStack) smallDisk(server string) (string, error) {
	if _, ok := s.cfg.smallDisks[server]; !ok {
		return "", fmt.Errorf("%w: %s", ErrNoSmallDisk, server)
	}
	return s.diskDir(server), nil
}

// FillDisk: see DiskFaults. Writes shrink from 1 MiB to one page as the space runs out, so the
// last free pages are taken too; a filesystem that still reports free blocks afterwards is an
// error, because a "full" disk with room left would prove nothing.
func (s *processStack) FillDisk(server string) error {
	dir, err := s.smallDisk(server)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, fillerName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("stack: fill %s: %w", server, err)
	}
	defer f.Close()
	for chunk := make([]byte, 1<<20); len(chunk) >= os.Getpagesize(); {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				return fmt.Errorf("stack: fill %s: %w", server, err)
			}
			chunk = chunk[:len(chunk)/2]
		}
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return fmt.Errorf("stack: fill %s: %w", server, err)
	}
	if st.Bavail > 0 {
		return fmt.Errorf("stack: fill %s: %d blocks still free", server, st.Bavail)
	}
	return nil
}

// FreeDisk: see DiskFaults.
func (s *processStack) FreeDisk(server string) error {
	dir, err := s.smallDisk(server)
	if err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(dir, fillerName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("stack: free %s: %w", server, err)
	}
	return nil
}
