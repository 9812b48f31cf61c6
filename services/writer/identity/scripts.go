package identity

import (
	_ "embed"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// The Lua scripts, one file each (lua/*.lua). redis.NewScript hashes the source once here; Run
// sends EVALSHA and falls back to EVAL only when the server lost its script cache (restart).
var (
	//go:embed lua/claim_window.lua
	claimWindowSrc string
	//go:embed lua/lease_claim.lua
	leaseClaimSrc string
	//go:embed lua/lease_claim_fixed.lua
	leaseClaimFixedSrc string
	//go:embed lua/lease_renew.lua
	leaseRenewSrc string
	//go:embed lua/lease_release.lua
	leaseReleaseSrc string

	claimWindowScript     = redis.NewScript(claimWindowSrc)
	leaseClaimScript      = redis.NewScript(leaseClaimSrc)
	leaseClaimFixedScript = redis.NewScript(leaseClaimFixedSrc)
	leaseRenewScript      = redis.NewScript(leaseRenewSrc)
	leaseReleaseScript    = redis.NewScript(leaseReleaseSrc)
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
