package identity

import (
	"embed"
	"strconv"

	"github.com/qim-dev/qim/services/internal/keyfamily"
	"github.com/qim-dev/qim/services/internal/luascript"
)

//go:embed lua/*.lua
var luaFS embed.FS

// The Lua scripts, one file each (lua/*.lua), bound to the Go types of their --! headers:
// luascript hashes each source once here and checks the types against the headers at package
// initialisation. A call sends EVALSHA and falls back to EVAL only when the server lost its
// script cache (restart).
var (
	claimWindowScript     = luascript.MustBind[claimWindowArgs, claimWindowOut](luaFS, "", "claim_window.lua")
	leaseClaimScript      = luascript.MustBind[leaseClaimArgs, leaseClaimOut](luaFS, "", "lease_claim.lua")
	leaseClaimFixedScript = luascript.MustBind[leaseArgs, leaseHeldOut](luaFS, "", "lease_claim_fixed.lua")
	leaseRenewScript      = luascript.MustBind[leaseArgs, leaseRenewedOut](luaFS, "", "lease_renew.lua")
	leaseReleaseScript    = luascript.MustBind[leaseReleaseArgs, leaseReleasedOut](luaFS, "", "lease_release.lua")
)

// claimWindowArgs calls claim_window.lua.
type claimWindowArgs struct {
	HLC      string `key:"hlc"`
	NowMs    int64  `arg:"now_ms"`
	WindowMs int64  `arg:"window_ms"`
	FloorMs  int64  `arg:"floor_ms"`
	ClaimID  string `arg:"claim_id"`
}

// claimWindowOut is the window claim_window.lua granted: [Start, Finish) in Unix ms.
type claimWindowOut struct {
	Start  int64 `reply:"start"`
	Finish int64 `reply:"finish"`
}

// leaseClaimArgs calls lease_claim.lua.
type leaseClaimArgs struct {
	Prefix     string `arg:"prefix"`
	MaxWriters int    `arg:"max_writers"`
	Owner      string `arg:"owner"`
	TTLMs      int64  `arg:"ttl_ms"`
}

// leaseClaimOut is the writer_id lease_claim.lua leased, -1 when none was free.
type leaseClaimOut struct {
	WriterID int64 `reply:"writer_id"`
}

// leaseArgs calls lease_claim_fixed.lua and lease_renew.lua.
type leaseArgs struct {
	Lease string `key:"lease"`
	Owner string `arg:"owner"`
	TTLMs int64  `arg:"ttl_ms"`
}

// leaseReleaseArgs calls lease_release.lua.
type leaseReleaseArgs struct {
	Lease string `key:"lease"`
	Owner string `arg:"owner"`
}

type (
	leaseHeldOut struct {
		Held int64 `reply:"held"`
	}
	leaseRenewedOut struct {
		Renewed int64 `reply:"renewed"`
	}
	leaseReleasedOut struct {
		Released int64 `reply:"released"`
	}
)

// Key layout (core Redis, standalone, appendfsync always):
//
//	qim:hlc:<region>:<writer>            hash {hw, claim, start}; no TTL, never deleted
//	qim:writer-lease:<region>:<writer>   string owner (32 hex digits); PX lease TTL
//
// region and writer are decimal. Keys are built by appending, never with fmt (house rule).
const (
	hlcKeyPrefix   = "qim:hlc:"
	leaseKeyPrefix = "qim:writer-lease:"
)

// appendHLCKey appends qim:hlc:<region>:<writer>.
func appendHLCKey(dst []byte, region, writer uint16) []byte {
	dst = append(dst, hlcKeyPrefix...)
	dst = strconv.AppendUint(dst, uint64(region), 10)
	dst = append(dst, ':')
	return strconv.AppendUint(dst, uint64(writer), 10)
}

// appendLeasePrefix appends qim:writer-lease:<region>: (the lease_claim scan prefix).
func appendLeasePrefix(dst []byte, region uint16) []byte {
	dst = append(dst, leaseKeyPrefix...)
	dst = strconv.AppendUint(dst, uint64(region), 10)
	return append(dst, ':')
}

// appendLeaseKey appends qim:writer-lease:<region>:<writer>.
func appendLeaseKey(dst []byte, region, writer uint16) []byte {
	return strconv.AppendUint(appendLeasePrefix(dst, region), uint64(writer), 10)
}

// HLCKey is the high-water mark key of (region, writer), for operators and audits.
func HLCKey(region, writer uint16) string { return string(appendHLCKey(nil, region, writer)) }

// LeaseKey is the lease key of (region, writer), for operators and audits.
func LeaseKey(region, writer uint16) string { return string(appendLeaseKey(nil, region, writer)) }

// KeyFamilies declares the keys this package writes (core Redis), for the redis-artifacts gate
// (inspect.RedisKeyFamilies).
func KeyFamilies() []keyfamily.Family {
	const n = `[0-9]+`
	core := keyfamily.Core
	return []keyfamily.Family{
		keyfamily.New("identity.hlc", core, "qim:hlc:<region>:<writer>", hlcKeyPrefix, n+":"+n).WithExample(HLCKey(1, 2)).
			Permanent("a writer_id's HLC high-water mark: expired, a later window could start below issued message_ids (invariant 4)"),
		keyfamily.New("identity.writer_lease", core, "qim:writer-lease:<region>:<writer>", leaseKeyPrefix, n+":"+n).
			WithExample(LeaseKey(1, 2)).Expiring(),
	}
}
