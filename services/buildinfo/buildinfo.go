// Package buildinfo is what a Q-IM binary says about itself: the product version
// (contract.ProductVersion) and what the Go toolchain stamped into the binary — the VCS revision
// and commit time, whether the tree was modified, the Go version. Every binary's --version prints
// Line (services/cmdline), and every service exports Info as the qim_build_info gauge (services/internal/obs), so an
// operator can tell which build answers on a port.
//
// A build without VCS stamping (go build -buildvcs=false, as CI's root-owned clone needs, or
// outside a checkout) takes the revision from the linker instead, when the build passed one
// (-ldflags "-X github.com/qim-dev/qim/services/buildinfo.revision=<sha>": the Makefile, the
// image script and the harness's build do); otherwise it reports "unknown" rather than guessing.
package buildinfo

import (
	"runtime/debug"
	"strings"

	"github.com/qim-dev/qim/contract"
)

// revision is set by the linker (-X) for builds without VCS stamping; see the package comment.
var revision string

// Info describes the running binary.
type Info struct {
	Version   string // contract.ProductVersion
	Revision  string // the VCS revision, "unknown" when not stamped
	Time      string // the revision's commit time (RFC 3339), "" when not stamped
	Modified  bool   // the tree had uncommitted changes
	GoVersion string
}

// Read reads the running binary's build information.
func Read() Info {
	info := Info{Version: contract.ProductVersion, Revision: "unknown"}
	if revision != "" {
		info.Revision = revision
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return info
	}
	info.GoVersion = bi.GoVersion
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.time":
			info.Time = s.Value
		case "vcs.modified":
			info.Modified = s.Value == "true"
		}
	}
	return info
}

// Line is what --version prints after the program's name: "0.1.0-dev (revision 1a2b3c4d5e6f,
// modified, 2026-12-06T01:00:00Z, go1.25.0)".
func (i Info) Line() string {
	parts := []string{"revision " + short(i.Revision)}
	if i.Modified {
		parts = append(parts, "modified")
	}
	if i.Time != "" {
		parts = append(parts, i.Time)
	}
	if i.GoVersion != "" {
		parts = append(parts, i.GoVersion)
	}
	return i.Version + " (" + strings.Join(parts, ", ") + ")"
}

func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}
