package svc

import (
	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/moderationtest"
)

// ModeratedTenant is the tenant whose SENDs (room events too) the Set's writers and RoomWriters
// put to the moderation stand-in
// (moderationtest: "spam…" rejected, "darn" rewritten), fail-closed. Every other tenant is not
// moderated, so no other gate pays a hook call per SEND.
var ModeratedTenant = contract.TenantID{Hi: 0x30d, Lo: 1}

// startModeration starts the stand-in for the product's moderation endpoint. It lives until the
// Set's Close, like the IdP: a restarted writer must still reach it.
func (s *Set) startModeration() {
	s.moderation = moderationtest.New()
}

// Moderation is the stand-in the writers call (nil when the Set has none).
func (s *Set) Moderation() *moderationtest.Server { return s.moderation }

// Moderates reports whether the writers are given the moderation hook (their binary knows it).
func (s *Set) Moderates() bool {
	return s.moderation != nil && knows(s.bin, Writer, "QIM_MODERATION_URL")
}

// moderationEnv points a writer or RoomWriter at the stand-in, for ModeratedTenant only (a
// baseline binary whose RoomWriter predates the hook is left without it).
func (s *Set) moderationEnv(service string, vars map[string]string) {
	if s.Moderates() && knows(s.bin, service, "QIM_MODERATION_URL") {
		vars["QIM_MODERATION_URL"] = s.moderation.URL()
		vars["QIM_MODERATION_TENANTS"] = ModeratedTenant.String()
	}
}
