package contract

import (
	"fmt"
	"strings"
	"time"
)

// Constant is one row of the contract constant table: the snake_case name used in the design
// docs (so every constant is traceable to docs/architecture.md, section 6, or an ADR such as
// docs/adr/0001-contract-values.md), its value and whether it is immutable once a cluster holds
// data.
type Constant struct {
	Name      string
	Value     any
	Immutable bool
	Why       string
}

// Constants returns the contract constant table. contract_test checks that every exported
// constant in constants.go appears here, and docs/contract-constants.md is generated from it.
func Constants() []Constant {
	return []Constant{
		{"lane_count", LaneCount, true, "lanes per MailboxShard; lane of a user never moves"},
		{"virtual_bucket_count", VirtualBucketCount, true, "stable user buckets; shards own bucket ranges"},
		{"commit_bucket_count", CommitBucketCount, true, "conversation commit buckets (one hash byte)"},
		{"message_seq_bucket_width", MessageSeqBucketWidth, true, "conversation_seq values per history bucket"},
		{"history_max_empty_bucket_scan", HistoryMaxEmptyBucketScan, false, "empty buckets one archive read scans"},
		{"shard_epoch_bits", ShardEpochBits, true, "mailbox_seq high part"},
		{"log_offset_bits", LogOffsetBits, true, "mailbox_seq low part"},
		{"mailbox_shards_default", MailboxShardsDefault, false, "power of two; writer, fanout, mailbox agree"},
		{"fanout_batch_default", FanoutBatchDefault, false, "outbox records per fanout batch"},
		{"fanout_batch_min", FanoutBatchMin, false, ""},
		{"fanout_batch_max", FanoutBatchMax, false, ""},
		{"writer_inflight_per_conn_default", WriterInflightPerConnDefault, false, "then the gateway stops reading"},
		{"writer_inflight_per_conn_max", WriterInflightPerConnMax, false, ""},
		{"mailbox_shard_fifo_capacity", MailboxShardFIFOCapacity, false, "full → pause that partition"},
		{"mailbox_materialize_permits", MailboxMaterializePermits, false, "global concurrent materializations"},
		{"archiver_batch_default", ArchiverBatchDefault, false, "outbox records per HistoryArchiver batch"},
		{"archiver_batch_max", ArchiverBatchMax, false, ""},
		{"max_frame_payload", MaxFramePayload, false, "largest logical client message"},
		{"rpc_client_message_max", RPCClientMessageMax, false, "internal gRPC receive limit for one client message with its identity"},
		{"stream_write_chunk_bytes", StreamWriteChunkBytes, false, "PONG never waits behind a large frame"},
		{"custom_type_max_bytes", CustomTypeMaxBytes, false, "else PAYLOAD_TOO_LARGE"},
		{"device_id_max_bytes", DeviceIDMaxBytes, false, "dev tokens and presence keys"},
		{"credential_max_bytes", CredentialMaxBytes, false, "AUTH: a longer token is refused before parsing"},
		{"inline_body_budget_bytes", InlineBodyBudgetBytes, false, "members × body budget for inlining"},
		{"event_group_max_entries", EventGroupMaxEntries, false, "per (user, mailbox_seq)"},
		{"event_group_max_bytes", EventGroupMaxBytes, false, "per (user, mailbox_seq)"},
		{"history_page_max_bytes", HistoryPageMaxBytes, false, "first record always returned"},
		{"client_message_id_bytes", ClientMessageIDBytes, true, "u128 idempotency id"},
		{"group_max_members", GroupMaxMembers, false, "phase one"},
		{"membership_event_broadcast_max_members", MembershipEventBroadcastMaxMembers, false, "above: pull only"},
		{"unread_exact_window", UnreadExactWindow, false, "exact up to, saturated beyond"},
		{"t_heavy_conversations", THeavyConversations, false, "T-HEAVY user size"},
		{"heartbeat_start", HeartbeatStart, false, "told to the client in PONG"},
		{"heartbeat_foreground_max", HeartbeatForegroundMax, false, ""},
		{"heartbeat_background_max", HeartbeatBackgroundMax, false, ""},
		{"heartbeat_grow_after", HeartbeatGrowAfter, false, "PINGs a full interval apart before the interval grows by half the start"},
		{"typing_expiry", TypingExpiry, false, "a TYPING_EVENT typing=true holds this long without renewal"},
		{"typing_per_second", TypingPerSecond, false, "TYPING frames per connection per second (burst typing_burst); more are dropped"},
		{"typing_burst", TypingBurst, false, ""},
		{"typing_group_max_members", TypingGroupMaxMembers, false, "TYPING in a larger group is dropped"},
		{"reaction_key_max_bytes", ReactionKeyMaxBytes, false, "REACT key length limit"},
		{"reaction_max_keys", ReactionMaxKeys, false, "distinct reactions on one message"},
		{"reaction_max_per_user", ReactionMaxPerUser, false, "reactions one user holds on one message"},
		{"typing_audience_ttl", TypingAudienceTTL, false, "a gateway reuses a group's member list for typing this long"},
		{"push_token_ttl", PushTokenTTL, false, "an offline-push registration expires this long after the device last registered it"},
		{"push_dedup_ttl", PushDedupTTL, false, "the NotificationService remembers an accepted (message, device) push this long"},
		{"push_token_max_bytes", PushTokenMaxBytes, true, "REGISTER_PUSH_TOKEN token length limit"},
		{"push_app_id_max_bytes", PushAppIDMaxBytes, true, "REGISTER_PUSH_TOKEN app_id length limit"},
		{"badge_max_conversations", BadgeMaxConversations, false, "an offline push's badge sums the unread of at most this many most recent conversations"},
		{"send_ack_probe_after", SendAckProbeAfter, false, ""},
		{"unavailable_detect_max", UnavailableDetectMax, false, ""},
		{"idempotency_window", IdempotencyWindow, false, "server key TTL and client dedup window"},
		{"client_pending_max_age", ClientPendingMaxAge, false, ""},
		{"hlc_window", HLCWindow, false, "persisted message_id window per claim"},
		{"hlc_renew_before", HLCRenewBefore, false, ""},
		{"writer_lease_renew", WriterLeaseRenew, false, ""},
		{"startup_dependency_wait", StartupDependencyWait, false, "a start-up check retried while the store does not answer"},
		{"history_hot_window", HistoryHotWindow, false, "Redis hot tier"},
		{"history_retention", HistoryRetention, false, "default retention class"},
		{"mailbox_retention", MailboxRetention, false, "cursor behind it → CURSOR_EXPIRED"},
		{"mailbox_expiry_margin", MailboxExpiryMargin, false, "a bucket this close to its expiry gets it again on every entry"},
		{"ephemeral_retention", EphemeralRetention, false, ""},
		{"slo_send_ack_p99", SLOSendAckP99, false, ""},
		{"slo_end_to_end_p99", SLOEndToEndP99, false, ""},
		{"slo_arrival_ratio", SLOArrivalRatio, false, "achieved / target rate"},
		{"slo_duration", SLODuration, false, ""},
		{"room_buffer_events_default", RoomBufferEventsDefault, false, "recent events a room's ring buffer replays"},
		{"room_buffer_age_default", RoomBufferAgeDefault, false, "oldest event a room's ring buffer replays"},
		{"room_seq_epoch_shift", RoomSeqEpochShift, true, "a room's room_seq starts at unix seconds << this in each owner"},
		{"max_joined_rooms_per_connection", MaxJoinedRoomsPerConnection, false, "JOIN_ROOM beyond it → RATE_LIMITED"},
		{"room_events_batch_max", RoomEventsBatchMax, false, "events per ROOM_EVENTS frame"},
		{"room_replay_max_bytes", RoomReplayMaxBytes, false, "encoded events of one join's replay (newest kept, truncated if cut)"},
		{"slo_session_first_p99", SLOSessionFirstP99, false, "T-HEAVY first screen"},
		{"slo_archive_lag_p99", SLOArchiveLagP99, false, "HistoryArchiver lag over a perf run (tiered backend)"},
		{"topic_outbox", TopicOutbox, true, "1 partition, key = message_id"},
		{"topic_dispatch", TopicDispatch, true, "partition = mailbox shard"},
		{"topic_presence", TopicPresence, true, "compacted; partition = mailbox shard; ADR-0027"},
		{"topic_feed", TopicFeed, false, "post-send feed (FeedMessage, key = conversation_id); ADR-0036"},
		{"group_archiver", GroupArchiver, false, "HistoryArchiver consumer group; archive watermark member"},
		{"domain_group_dispatch", DomainGroupDispatch, true, "dispatch_id hash prefix"},
		{"domain_endpoint_scope", DomainEndpointScope, true, "client store path segment"},
		{"domain_direct_conversation", DomainDirectConversation, true, ""},
		{"domain_user_bucket", DomainUserBucket, true, ""},
		{"domain_commit_bucket", DomainCommitBucket, true, ""},
		{"domain_client_message_id", DomainClientMessageID, true, ""},
		{"domain_send_identity", DomainSendIdentity, true, "36-byte idempotency identity of a SEND"},
		{"domain_dispatch_digest", DomainDispatchDigest, true, "payload_digest of a GroupDispatch"},
		{"domain_group_id", DomainGroupID, true, "group id from (tenant, creator, request id)"},
		{"domain_membership_cmid", DomainMembershipCmid, true, "client_message_id of a membership change"},
		{"domain_writer_route", DomainWriterRoute, false, "gateway affinity of a conversation to a writer instance (rendezvous)"},
		{"domain_room_route", DomainRoomRoute, false, "gateway placement of a room on its RoomWriter instance (rendezvous)"},
		{"membership_custom_type", MembershipCustomType, true, "custom_type of membership CONTROL messages"},
		{"amend_custom_type", AmendCustomType, true, "custom_type of amendment (recall, edit, delete) CONTROL messages"},
		{"amend_recall_window", AmendRecallWindow, false, "how long after sending a message may be recalled (QIM_WRITER_RECALL_WINDOW)"},
	}
}

// FormatValue renders a table value for docs: durations in Go form, strings quoted.
func FormatValue(v any) string {
	switch x := v.(type) {
	case time.Duration:
		return x.String()
	case string:
		return `"` + strings.ReplaceAll(x, "\x00", `\0`) + `"`
	}
	return fmt.Sprint(v)
}
