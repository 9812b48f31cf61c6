package presence

import (
	"slices"
	"testing"

	"github.com/qim-dev/qim/contract"
)

var tenant = contract.TenantID{Lo: 7}

func on(user contract.UserID, device, gw string, boot, epoch uint64) Entry {
	return Entry{Device: Device{tenant, user, device}, Gateway: gw, Boot: boot, Epoch: epoch, Online: true}
}

func off(user contract.UserID, device, gw string, boot, epoch uint64) Entry {
	e := on(user, device, gw, boot, epoch)
	e.Online = false
	return e
}

func boot(gw string, b uint64) Entry { return Entry{Gateway: gw, Boot: b} }

// Each case applies entries in the order a consumer could see them and states where user 1 is.
func TestDirectoryOrdersBySessionEpoch(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries []Entry
		want    []string // Gateways of user 1
	}{
		{"online", []Entry{on(1, "phone", "gA", 1, 5)}, []string{"gA"}},
		{"online then its offline", []Entry{on(1, "phone", "gA", 1, 5), off(1, "phone", "gA", 1, 5)}, nil},
		{"newer login on another gateway replaces", []Entry{on(1, "phone", "gA", 1, 5), on(1, "phone", "gB", 1, 6)}, []string{"gB"}},
		{"older login landing late is ignored", []Entry{on(1, "phone", "gB", 1, 6), on(1, "phone", "gA", 1, 5)}, []string{"gB"}},
		{"the older session's offline does not end the newer", []Entry{on(1, "phone", "gA", 1, 5), on(1, "phone", "gB", 1, 6), off(1, "phone", "gA", 1, 5)}, []string{"gB"}},
		{"two devices on two gateways", []Entry{on(1, "phone", "gA", 1, 5), on(1, "laptop", "gB", 1, 2)}, []string{"gA", "gB"}},
		{"two devices on one gateway listed once", []Entry{on(1, "phone", "gA", 1, 5), on(1, "laptop", "gA", 1, 2)}, []string{"gA"}},
		{"a newer boot of the gateway ends its sessions", []Entry{on(1, "phone", "gA", 1, 5), boot("gA", 2)}, nil},
		{"an entry of a replaced boot is ignored", []Entry{boot("gA", 2), on(1, "phone", "gA", 1, 5)}, nil},
		{"a session of the new boot counts", []Entry{on(1, "phone", "gA", 1, 5), boot("gA", 2), on(1, "phone", "gA", 2, 6)}, []string{"gA"}},
		{"an old boot announced late changes nothing", []Entry{boot("gA", 2), on(1, "phone", "gA", 2, 6), boot("gA", 1)}, []string{"gA"}},
		{"another gateway's boot leaves this one alone", []Entry{on(1, "phone", "gA", 1, 5), boot("gB", 9)}, []string{"gA"}},
		{"another user's entries leave this one alone", []Entry{on(1, "phone", "gA", 1, 5), on(2, "phone", "gB", 1, 9), off(2, "phone", "gB", 1, 9)}, []string{"gA"}},
	} {
		d := New()
		for _, e := range tc.entries {
			d.Apply(e)
		}
		if got := d.Gateways(nil, tenant, 1); !slices.Equal(got, tc.want) {
			t.Errorf("%s: Gateways = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestDirectoryApplyReportsChangesAndForgetsOfflineDevices(t *testing.T) {
	d := New()
	steps := []struct {
		e       Entry
		changed bool
		users   int
	}{
		{on(1, "phone", "gA", 1, 5), true, 1},
		{on(1, "phone", "gA", 1, 5), false, 1}, // a replay
		{off(1, "phone", "gA", 1, 4), false, 1},
		{off(1, "phone", "gA", 1, 5), true, 0},
		{off(1, "phone", "gA", 1, 5), false, 0},
		{boot("gA", 3), true, 0},
		{boot("gA", 3), false, 0},
	}
	for i, s := range steps {
		if got := d.Apply(s.e); got != s.changed || d.Users() != s.users {
			t.Errorf("step %d: changed %v, users %d; want %v, %d", i, got, d.Users(), s.changed, s.users)
		}
	}
}

func TestDirectoryOnline(t *testing.T) {
	d := New()
	d.Apply(on(1, "phone", "gA", 1, 5))
	if gw, epoch, ok := d.Online(Device{tenant, 1, "phone"}); !ok || gw != "gA" || epoch != 5 {
		t.Errorf("Online = %q, %d, %v", gw, epoch, ok)
	}
	if _, _, ok := d.Online(Device{tenant, 1, "laptop"}); ok {
		t.Error("a device never seen is online")
	}
	d.Apply(boot("gA", 2))
	if _, _, ok := d.Online(Device{tenant, 1, "phone"}); ok {
		t.Error("a device of a replaced boot is online")
	}
}

func TestDirectoryDevices(t *testing.T) {
	d := New()
	for _, e := range []Entry{on(1, "phone", "gA", 1, 5), on(1, "laptop", "gB", 1, 2), on(1, "tablet", "gC", 1, 3), boot("gC", 2),
		on(2, "phone", "gA", 1, 9), on(1, "watch", "gA", 1, 4), off(1, "watch", "gA", 1, 4)} {
		d.Apply(e)
	}
	want := []Location{{"laptop", "gB", 2}, {"phone", "gA", 5}}
	if got := d.Devices(nil, tenant, 1); !slices.Equal(got, want) {
		t.Fatalf("Devices = %v, want %v (a replaced boot's and an offline device left out)", got, want)
	}
	if got := d.Devices(nil, tenant, 3); len(got) != 0 {
		t.Fatalf("an unknown user has devices %v", got)
	}
}
