package svc_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/qim-dev/qim/gates/stack"
	"github.com/qim-dev/qim/gates/svc"
)

// The HistoryArchiver belongs to a deployment exactly when the stack has a CQL node, and only
// then do the services get the archive's variables.
func TestServicesIncludeTheArchiverOnlyWithACQLNode(t *testing.T) {
	for _, cql := range []string{"", "127.0.0.1:9042"} {
		set, err := svc.New("qim", stack.Endpoints{Dir: t.TempDir(), CQL: cql})
		if err != nil {
			t.Fatal(err)
		}
		names, env := set.Services(), strings.Join(set.Env(svc.Writer), " ")
		withArchiver := slices.Contains(names, svc.Archiver)
		order := slices.DeleteFunc(slices.Clone(svc.Order), func(s string) bool {
			return (s == svc.Room && !set.Rooms()) || (s == svc.Notify && !set.Notifies())
		})
		if withArchiver != (cql != "") || !slices.Equal(names[:len(order)], order) {
			t.Errorf("CQL %q: services %v", cql, names)
		}
		if strings.Contains(env, "QIM_CQL_HOSTS=") != (cql != "") || (cql != "" && set.Addrs.Metrics[svc.Archiver] == "") {
			t.Errorf("CQL %q: env %s, archiver metrics %q", cql, env, set.Addrs.Metrics[svc.Archiver])
		}
	}
}

// StopAll stops the HistoryArchiver too: the chaos matrix deploys a fresh set per cell, and an
// archiver left running by every earlier cell would archive beside the cell's own (found in the
// release run: by the last cells about eighteen archivers shared one consumer group).
func TestStopAllStopsTheArchiver(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "fake-qim")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	set, err := svc.New(bin, stack.Endpoints{Dir: dir, CQL: "127.0.0.1:9042"})
	if err != nil {
		t.Fatal(err)
	}
	if err := set.StartNoWait(svc.Archiver); err != nil {
		t.Fatal(err)
	}
	if !set.Running(svc.Archiver) {
		t.Fatal("the fake archiver is not running")
	}
	if err := set.StopAll(); err != nil {
		t.Fatal(err)
	}
	if exited, err := set.WaitExit(svc.Archiver, 30*time.Second); !exited {
		t.Fatalf("the archiver still runs after StopAll (%v)", err)
	}
}
