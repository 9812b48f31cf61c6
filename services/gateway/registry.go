package gateway

import (
	"errors"
	"sync"
	"time"

	"github.com/qim-dev/qim/contract"
)

// userKey identifies a user; push routes by it (every live device of the user gets the events).
type userKey struct {
	tenant contract.TenantID
	user   contract.UserID
}

// session is what the registry knows about one authenticated connection.
type session struct {
	key    userKey
	device string
	epoch  uint64 // session_epoch assigned at AUTH
	conn   *conn
	// issuedAt is the credential's issue time (zero: unknown), for revocations (revoke.go).
	issuedAt time.Time
}

// errStaleSession: a newer session of the same (tenant, user, device) is already registered, so
// this one lost a race between two concurrent logins and must not take over.
var errStaleSession = errors.New("gateway: a newer session of this device is live")

const registryShards = 64

// registry is the table of live authenticated sessions on this gateway.
//
// Invariants: at most one session per (tenant, user, device); when two logins of one device
// race, the one with the higher session_epoch wins regardless of which registers first, so the
// surviving connection is always the newest login; a connection removes only its own entry.
//
// How: 64 shards by user, each a mutex around map[userKey][]*session (a user has a handful of
// devices, so a slice beats a nested map). Push takes a shard's read lock to copy the user's
// connections out, then queues to them with no lock held.
//
// Rejected: one global sync.Map keyed by device. Push needs all devices of a user, which a
// device-keyed map can only answer by a scan, and a single lock would serialise every AUTH and
// every PushBatch target on a busy gateway.
type registry struct {
	shards [registryShards]registryShard
}

type registryShard struct {
	mu        sync.RWMutex
	users     map[userKey][]*session
	admitting map[deviceKey]*admission // logins between their epoch INCR and register
}

type deviceKey struct {
	userKey
	device string
}

// admission is the logins of one device being admitted, and the highest epoch another gateway
// announced for the device meanwhile (remoteOnline). Without it a login on gateway B landing
// between A's INCR and A's register would find nothing to kick on A, and A's older session
// would then register and stay live beside B's (ADR-0027).
type admission struct {
	n      int
	remote uint64
}

func newRegistry() *registry {
	r := &registry{}
	for i := range r.shards {
		r.shards[i].users = make(map[userKey][]*session)
		r.shards[i].admitting = make(map[deviceKey]*admission)
	}
	return r
}

func (r *registry) shard(k userKey) *registryShard {
	h := k.tenant.Hi ^ k.tenant.Lo ^ uint64(k.user)*0x9E3779B97F4A7C15
	return &r.shards[h>>58]
}

// beginAdmission marks a login of the device in progress; call it before the epoch INCR and
// the returned end once the login registered or failed.
func (r *registry) beginAdmission(k userKey, device string) (end func()) {
	sh, dk := r.shard(k), deviceKey{k, device}
	sh.mu.Lock()
	a := sh.admitting[dk]
	if a == nil {
		a = &admission{}
		sh.admitting[dk] = a
	}
	a.n++
	sh.mu.Unlock()
	return func() {
		sh.mu.Lock()
		if a.n--; a.n == 0 {
			delete(sh.admitting, dk)
		}
		sh.mu.Unlock()
	}
}

// remoteOnline applies another gateway's login of the device with epoch: it returns the local
// session that login replaced (the caller kicks it), if any, and makes a login of the device
// being admitted here with a lower epoch fail as stale.
func (r *registry) remoteOnline(k userKey, device string, epoch uint64) *session {
	sh := r.shard(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if a := sh.admitting[deviceKey{k, device}]; a != nil {
		a.remote = max(a.remote, epoch)
	}
	for _, s := range sh.users[k] {
		if s.device == device && s.epoch < epoch {
			return s
		}
	}
	return nil
}

// register installs s and returns the session it replaced, if any. It returns errStaleSession
// (and changes nothing) when a session with a higher epoch already holds the device, here or,
// as announced while s was admitted, on another gateway.
func (r *registry) register(s *session) (*session, error) {
	sh := r.shard(s.key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if a := sh.admitting[deviceKey{s.key, s.device}]; a != nil && a.remote > s.epoch {
		return nil, errStaleSession
	}
	list := sh.users[s.key]
	for i, old := range list {
		if old.device != s.device {
			continue
		}
		if old.epoch > s.epoch {
			return nil, errStaleSession
		}
		list[i] = s
		return old, nil
	}
	sh.users[s.key] = append(list, s)
	return nil, nil
}

// unregister removes s if it is still the registered session of its device and reports
// whether it was (a session replaced on this gateway was removed by its replacement).
func (r *registry) unregister(s *session) bool {
	sh := r.shard(s.key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	list := sh.users[s.key]
	for i, cur := range list {
		if cur != s {
			continue
		}
		list = append(list[:i], list[i+1:]...)
		if len(list) == 0 {
			delete(sh.users, s.key)
		} else {
			sh.users[s.key] = list
		}
		return true
	}
	return false
}

// registered reports whether s is still its device's registered session here.
func (r *registry) registered(s *session) bool {
	sh := r.shard(s.key)
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	for _, cur := range sh.users[s.key] {
		if cur == s {
			return true
		}
	}
	return false
}

// appendConns appends the live connections of k to dst.
func (r *registry) appendConns(dst []*conn, k userKey) []*conn {
	sh := r.shard(k)
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	for _, s := range sh.users[k] {
		dst = append(dst, s.conn)
	}
	return dst
}

// appendSessions appends the live sessions of k to dst.
func (r *registry) appendSessions(dst []*session, k userKey) []*session {
	sh := r.shard(k)
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	return append(dst, sh.users[k]...)
}

// appendAll appends every live session to dst, one shard at a time (no global lock).
func (r *registry) appendAll(dst []*session) []*session {
	for i := range r.shards {
		sh := &r.shards[i]
		sh.mu.RLock()
		for _, ss := range sh.users {
			dst = append(dst, ss...)
		}
		sh.mu.RUnlock()
	}
	return dst
}
