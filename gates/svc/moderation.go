package svc

import (
	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/writer/moderation/moderationtest"
)

// ModeratedTenant is the tenant whose SENDs the Set's writers put to the moderation stand-in
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
	return s.moderation != nil && knows(s.bin, Writer, "QIM_WRITER_MODERATION_URL")
}

// moderationEnv points a writer at the stand-in, for ModeratedTenant only.
func (s *Set) moderationEnv(vars map[string]string) {
	if s.Moderates() {
		vars["QIM_WRITER_MODERATION_URL"] = s.moderation.URL()
		vars["QIM_WRITER_MODERATION_TENANTS"] = ModeratedTenant.String()
	}
}
