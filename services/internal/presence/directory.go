// Package presence is the PresenceDirectory (ADR-0027). Its core, the Directory, is
// deterministic and does no I/O: the state a consumer of qim.presence builds — which
// ConnectionNodes hold each user's online devices — and the rules that order entries by
// session_epoch. Around it: the record layout (Key, Partition, Encode, Decode) and the Follower,
// which reads qim.presence partitions and hands their entries to the owner (a MailboxNode
// building a Directory, a gateway kicking replaced sessions).
package presence

import (
	"slices"
	"strings"

	"github.com/qim-dev/qim/contract"
)

// Device names one device of one user: the key of a qim.presence entry.
type Device struct {
	Tenant   contract.TenantID
	User     contract.UserID
	DeviceID string
}

// Entry is one decoded qim.presence record. User 0 is a gateway boot announcement: Gateway and
// Boot only.
type Entry struct {
	Device
	Gateway string // the ConnectionNode's Push address
	Boot    uint64 // which start of that address wrote the entry
	Epoch   uint64 // the session's session_epoch
	Online  bool
}

type userKey struct {
	tenant contract.TenantID
	user   contract.UserID
}

type location struct {
	gateway string
	boot    uint64
	epoch   uint64
}

// Directory is where each user's devices are online, built from qim.presence entries in any
// order a consumer may see them.
//
// Invariants: a device's location is the online entry with the highest session_epoch applied so
// far, unless an offline entry of at least that epoch came after it; a location whose gateway has
// announced a newer boot is never returned. Only online devices are held, so memory follows the
// online population, not everyone ever seen.
//
// Why forgetting a device on its offline entry is safe: a lower-epoch online entry arriving later
// comes from another gateway's older session, and that gateway writes the session's own offline
// entry after it, on the same key and so the same partition, in order. The stale location lives
// until then and costs at most pushes to a gateway that drops them (pushes are hints; the cursor
// moves only by pull). Rejected: remembering every offline epoch, which grows without bound.
//
// A Directory is not safe for concurrent use; its owner serialises Apply and the queries.
type Directory struct {
	users map[userKey]map[string]location // user → device → where it is online
	boots map[string]uint64               // gateway push address → newest boot announced
}

// New returns an empty Directory.
func New() *Directory {
	return &Directory{users: map[userKey]map[string]location{}, boots: map[string]uint64{}}
}

// Apply folds one entry into the directory and reports whether anything changed.
func (d *Directory) Apply(e Entry) bool {
	if e.User == 0 {
		return d.applyBoot(e.Gateway, e.Boot)
	}
	if e.Boot < d.boots[e.Gateway] {
		return false // written by a start of that gateway that has since been replaced
	}
	k := userKey{e.Tenant, e.User}
	devs := d.users[k]
	cur, held := devs[e.DeviceID]
	if held && e.Epoch < cur.epoch {
		return false
	}
	if !e.Online {
		if !held {
			return false
		}
		delete(devs, e.DeviceID)
		if len(devs) == 0 {
			delete(d.users, k)
		}
		return true
	}
	next := location{gateway: e.Gateway, boot: e.Boot, epoch: e.Epoch}
	if held && cur == next {
		return false
	}
	if devs == nil {
		devs = map[string]location{}
		d.users[k] = devs
	}
	devs[e.DeviceID] = next
	return true
}

func (d *Directory) applyBoot(gateway string, boot uint64) bool {
	if boot <= d.boots[gateway] {
		return false
	}
	d.boots[gateway] = boot
	return true
}

// Gateways appends to dst the distinct push addresses holding an online device of the user,
// sorted, and returns the extended slice (none: the user is offline everywhere).
func (d *Directory) Gateways(dst []string, tenant contract.TenantID, user contract.UserID) []string {
	start := len(dst)
	for _, loc := range d.users[userKey{tenant, user}] {
		if loc.boot < d.boots[loc.gateway] || slices.Contains(dst[start:], loc.gateway) {
			continue
		}
		dst = append(dst, loc.gateway)
	}
	slices.Sort(dst[start:])
	return dst
}

// Online reports where one device is online: its gateway and session_epoch.
func (d *Directory) Online(dev Device) (gateway string, epoch uint64, ok bool) {
	loc, held := d.users[userKey{dev.Tenant, dev.User}][dev.DeviceID]
	if !held || loc.boot < d.boots[loc.gateway] {
		return "", 0, false
	}
	return loc.gateway, loc.epoch, true
}

// Location is where one device of a user is online.
type Location struct {
	DeviceID string
	Gateway  string // the ConnectionNode's Push address
	Epoch    uint64 // the session's session_epoch
}

// Devices appends the user's online devices to dst, sorted by device id (the admin API's
// answer to "where is this user online").
func (d *Directory) Devices(dst []Location, tenant contract.TenantID, user contract.UserID) []Location {
	start := len(dst)
	for id, loc := range d.users[userKey{tenant, user}] {
		if loc.boot < d.boots[loc.gateway] {
			continue
		}
		dst = append(dst, Location{DeviceID: id, Gateway: loc.gateway, Epoch: loc.epoch})
	}
	slices.SortFunc(dst[start:], func(a, b Location) int { return strings.Compare(a.DeviceID, b.DeviceID) })
	return dst
}

// Users is how many users have at least one device held (a gauge; stale boots included until
// their offline entries arrive).
func (d *Directory) Users() int { return len(d.users) }
