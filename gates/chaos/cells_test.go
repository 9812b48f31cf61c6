package chaos

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/qim-dev/qim/gates/svc"
)

func TestCellNamesAreUniqueAndEveryProcessHasAQuickKill(t *testing.T) {
	seen := map[string]bool{}
	quick := map[string]bool{}
	for _, c := range Cells() {
		if seen[c.Name] {
			t.Errorf("cell %s twice", c.Name)
		}
		seen[c.Name] = true
		if c.GoTest == nil && (c.Fault == nil || c.Heal == nil) {
			t.Errorf("cell %s has no fault or no heal", c.Name)
		}
		if c.Quick {
			quick[c.Service] = true
			quick[c.Name] = true
		}
	}
	// One kill of each process: every service and every server.
	for _, want := range []string{svc.Writer, svc.Fanout, svc.Mailbox, "session-kill", "gateway-kill", "kafka-kill", "redis-core-kill", "redis-mailbox-kill"} {
		if !quick[want] {
			t.Errorf("the quick subset has no kill of %s", want)
		}
	}
}

func TestSelect(t *testing.T) {
	all, err := Select(nil)
	nightly, nerr := Select([]string{"nightly"})
	if err != nil || nerr != nil || len(nightly) == 0 || len(all)+len(nightly) != len(Cells()) {
		t.Fatalf("release: %d cells, nightly %d, of %d: %v %v", len(all), len(nightly), len(Cells()), err, nerr)
	}
	for _, c := range all {
		if c.Nightly {
			t.Errorf("nightly cell %s in the default selection", c.Name)
		}
	}
	q, err := Select([]string{"quick"})
	if err != nil || len(q) == 0 || len(q) >= len(all) {
		t.Fatalf("quick: %d cells, %v", len(q), err)
	}
	one, err := Select([]string{"gateway-kill"})
	if err != nil || len(one) != 1 || one[0].Name != "gateway-kill" {
		t.Fatalf("one: %v %v", one, err)
	}
	_, err = Select([]string{"gateway-kill", "nope"})
	var u *UnknownCellsError
	if !errors.As(err, &u) || len(u.Names) != 1 || u.Names[0] != "nope" || !strings.Contains(err.Error(), "gateway-kill") {
		t.Fatalf("unknown: %v", err)
	}
}

func TestOptionsRequireTheirInputsAndFillDefaults(t *testing.T) {
	var o Options
	if err := o.Validate(); !errors.Is(err, ErrConfig) {
		t.Fatalf("empty options: %v", err)
	}
	o = Options{Bin: "qim", ReportDir: t.TempDir(), Stack: fakeStack}
	if err := o.Validate(); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "cannot inject server faults") {
		t.Fatalf("a stack without faults must be refused: %v", err)
	}
	o = Options{Bin: "qim", ReportDir: t.TempDir(), Stack: fakeFaultStack{}, FaultAt: time.Minute}
	if err := o.Validate(); !errors.Is(err, ErrConfig) {
		t.Fatalf("fault after the window: %v", err)
	}
	o = Options{Bin: "qim", ReportDir: t.TempDir(), Stack: fakeFaultStack{}}
	if err := o.Validate(); err != nil || o.Rate != 100 || o.Window != 30*time.Second || o.StallAfter != 10*time.Second {
		t.Fatalf("defaults: %v %+v", err, o)
	}
}
