package contract

import "time"

// Immutable once a cluster is built: data, cursors and routing depend on these (guards.go).
const (
	// LaneCount is the number of visibility lanes inside a MailboxShard. Fixed at the target tier
	// from day one: phase-one groups never need 64 lanes, but the number can never change later.
	LaneCount = 64
	// VirtualBucketCount is the number of stable user buckets. Users are routed bucket → shard, never
	// by node count, so resharding moves whole buckets and never re-hashes users.
	VirtualBucketCount = 65536
	// CommitBucketCount is the number of commit buckets conversations are hashed into; commit
	// facts and group keys of one bucket live on one Redis instance.
	CommitBucketCount = 256
	// MessageSeqBucketWidth is the number of conversation_seq values per history bucket
	// (seq_bucket = conversation_seq / width), the CQL partition and the unit of an empty-bucket scan.
	MessageSeqBucketWidth = 1024
	// ShardEpochBits and LogOffsetBits split a MailboxSeq: shard_epoch:16 ‖ log_offset:48.
	ShardEpochBits = 16
	LogOffsetBits  = 48
)

// Deployment defaults; each has a configuration knob validated against the bounds here.
const (
	MailboxShardsDefault = 64   // power of two in [1, VirtualBucketCount]; writer, fanout, mailbox must agree
	FanoutBatchDefault   = 512  // outbox records planned per fanout batch
	FanoutBatchMin       = 1    //
	FanoutBatchMax       = 1024 //
	// WriterInflightPerConnDefault is how many SENDs one gateway connection may have at the writer
	// before the gateway stops reading the socket (TCP back-pressure). It is a hidden queue: too
	// low and client ACK latency grows while the writer's own histogram looks healthy.
	WriterInflightPerConnDefault = 1024
	WriterInflightPerConnMax     = 8192
	MailboxShardFIFOCapacity     = 128 // per-shard materialization FIFO; full → pause only that partition
	MailboxMaterializePermits    = 64  // global concurrent materializations
	// ArchiverBatchDefault and ArchiverBatchMax bound the Outbox records the HistoryArchiver
	// writes to CQL before one position commit (seed: history_archive_batch_max).
	ArchiverBatchDefault = 512
	ArchiverBatchMax     = 4096
)

// Wire and payload limits.
const (
	MaxFramePayload = 4 << 20 // largest logical message on the client wire
	// RPCClientMessageMax is the largest internal gRPC message a service that receives one client
	// message whole (the writer's SEND, the RoomWriter's publish) accepts: the message plus the
	// identity the gateway puts around it. gRPC's default of 4 MiB refuses a maximal SEND in the
	// transport, which ends the gateway's whole stream instead of answering that SEND.
	RPCClientMessageMax   = MaxFramePayload + 1<<10
	StreamWriteChunkBytes = 64 << 10 // large frames are written in chunks so PONG is never blocked
	CustomTypeMaxBytes    = 64       // longer custom_type → PAYLOAD_TOO_LARGE
	DeviceIDMaxBytes      = 64       // a device id is 1..64 bytes (tokens, presence keys)
	CredentialMaxBytes    = 8 << 10  // a longer AuthRequest.token is refused unparsed (UNAUTHORIZED)
	InlineBodyBudgetBytes = 8 << 10  // members × body ≤ budget → body is inlined in mailbox entries
	EventGroupMaxEntries  = 8        // per (user, mailbox_seq)
	EventGroupMaxBytes    = 8 << 10  // per (user, mailbox_seq)
	HistoryPageMaxBytes   = 512 << 10
	// HistoryMaxEmptyBucketScan is the most consecutive empty history buckets one archive read
	// scans before it returns and says where to continue (conversation_seq may have holes).
	HistoryMaxEmptyBucketScan = 64
	ClientMessageIDBytes      = 16
)

// Groups, unread and session list.
const (
	GroupMaxMembers                    = 1000
	MembershipEventBroadcastMaxMembers = 500 // above this, membership changes are pull-only
	// MembershipCustomType is the custom_type of every membership CONTROL message; its body is a
	// qim.v1.MembershipChange.
	MembershipCustomType = "qim.membership.v1"
	// AmendCustomType is the custom_type of every amendment (recall, edit, delete) CONTROL
	// message; its body is a qim.v1.MessageAmendment (amend.go, ADR-0037).
	AmendCustomType     = "qim.amend.v1"
	UnreadExactWindow   = 200 // unread is exact up to this, saturated beyond
	THeavyConversations = 5000
)

// Time constants.
const (
	HeartbeatStart         = 60 * time.Second
	HeartbeatForegroundMax = 120 * time.Second
	HeartbeatBackgroundMax = 240 * time.Second
	// HeartbeatGrowAfter is how many PINGs in a row must arrive a full interval apart — the
	// path held that long — before the server lengthens the interval by half its start value.
	HeartbeatGrowAfter = 3
	// TypingExpiry is how long a TYPING_EVENT with typing=true holds without renewal; a client
	// renews while its user types (TYPING every 3 s is enough). TypingPerSecond and TypingBurst
	// bound the TYPING frames a connection may send; more are dropped, never answered.
	TypingExpiry    = 6 * time.Second
	TypingPerSecond = 2
	TypingBurst     = 5
	// TypingGroupMaxMembers: TYPING in a larger group is dropped (n frames per keystroke burst,
	// and a hint nobody can follow among so many). TypingAudienceTTL is how long a gateway reuses
	// a group's member list for typing: a member removed meanwhile may see "X is typing" that
	// long, nothing else.
	TypingGroupMaxMembers = 100
	// ReactionKeyMaxBytes bounds a reaction key; ReactionMaxKeys the distinct keys of one message
	// and ReactionMaxPerUser the keys one user holds on one message (ADR-0038): a message's
	// reactions stay a short list whatever a client sends.
	ReactionKeyMaxBytes = 32
	ReactionMaxKeys     = 20
	ReactionMaxPerUser  = 3
	TypingAudienceTTL   = 5 * time.Second
	// PushTokenTTL is how long a device's offline-push registration lives after it was last
	// registered: apps register their token at every start, so a device gone for longer stops
	// being woken. PushDedupTTL is how long the NotificationService remembers that a
	// (message, device) notification was accepted by its provider, longer than any replay of
	// qim.dispatch it may consume again after a restart.
	PushTokenTTL      = 60 * 24 * time.Hour
	PushDedupTTL      = 24 * time.Hour
	PushTokenMaxBytes = 4096
	// BadgeMaxConversations bounds the conversations summed for one offline push's badge.
	BadgeMaxConversations = 100
	PushAppIDMaxBytes     = 255
	SendAckProbeAfter     = 3 * time.Second // no SEND_ACK for this long → probe the connection
	UnavailableDetectMax  = 7 * time.Second // end-to-end unavailability reported within this
	// IdempotencyWindow covers the (tenant, sender, client_message_id) key on the server and the
	// client's dedup entries: twice the one-hour stalled-watermark operating limit. It dominates
	// the number of Redis keys, so it is not longer.
	IdempotencyWindow   = 2 * time.Hour
	ClientPendingMaxAge = 24 * time.Hour
	HLCWindow           = 60 * time.Second // persisted message_id time window claimed per writer
	HLCRenewBefore      = 20 * time.Second // claim the next window this long before exhaustion
	WriterLeaseRenew    = 20 * time.Second
	// StartupDependencyWait bounds how long a service's start-up waits for a dependency that
	// does not answer (the broker, above all) before the process exits: long enough to ride out
	// a broker restart or a rolling restart while the broker is unreachable, short enough that a
	// wrong address fails a deployment visibly. A configuration refusal (a missing topic, a
	// wrong partition count) is never waited for.
	StartupDependencyWait = 60 * time.Second
	HistoryHotWindow      = 7 * 24 * time.Hour
	HistoryRetention      = 30 * 24 * time.Hour
	// AmendRecallWindow is how long after sending the sender may still recall a message (the
	// writer's default; QIM_WRITER_RECALL_WINDOW changes it per deployment). EDIT and DELETE
	// have no window.
	AmendRecallWindow  = 2 * time.Minute
	MailboxRetention   = 7 * 24 * time.Hour
	EphemeralRetention = 24 * time.Hour
	// MailboxExpiryMargin: a day bucket whose expiry is further than this ahead of the
	// MailboxNode's clock and whose day is already indexed keeps the expiry its first entry set,
	// so materializing into it skips the expiry writes; closer to its expiry (or with a clock
	// off by more than this) every entry sets the expiry again, as an expired bucket must not
	// come back without one.
	MailboxExpiryMargin = time.Hour
)

// SLO targets of the performance gates.
const (
	SLOSendAckP99      = 150 * time.Millisecond
	SLOEndToEndP99     = 300 * time.Millisecond
	SLOArrivalRatio    = 0.99
	SLODuration        = 180 * time.Second
	SLOSessionFirstP99 = 500 * time.Millisecond // T-HEAVY first screen
	// SLOArchiveLagP99 bounds the HistoryArchiver's lag (now − archive watermark T) over a perf
	// run: an archiver that keeps up trails by about its batch and tick (2 s here); one that
	// falls behind grows past any bound within the run.
	SLOArchiveLagP99 = 15 * time.Second
)

// Kafka topics.
const (
	TopicOutbox   = "qim.outbox"   // one partition; key = message_id; value = CommittedEnvelope
	TopicDispatch = "qim.dispatch" // partition = mailbox shard; value = GroupDispatch
	// TopicPresence is the PresenceDirectory (ADR-0027): compacted, partitioned like
	// qim.dispatch (partition = the user's mailbox shard); value = PresenceEntry.
	TopicPresence = "qim.presence"
	// TopicFeed is the post-send feed's default topic (FeedMessage, key = conversation_id),
	// produced only when a NotificationService is given QIM_NOTIFY_FEED_TOPIC.
	TopicFeed = "qim.feed"
	// GroupArchiver is the HistoryArchiver's default consumer group, and so the member of the
	// archive watermark the writer's hot-tier trim reads unless configured otherwise.
	GroupArchiver = "qim-archiver"
)

// Domain-separation prefixes of the deterministic hashes. Each ends in NUL so no prefix is a
// prefix of another input; changing one changes every derived id.
const (
	DomainGroupDispatch      = "qim.group-dispatch.v1\x00"
	DomainEndpointScope      = "qim.endpoint-scope.v1\x00"
	DomainDirectConversation = "qim.direct-conversation.v1\x00"
	DomainUserBucket         = "qim.user-bucket.v1\x00"
	DomainCommitBucket       = "qim.commit-bucket.v1\x00"
	DomainClientMessageID    = "qim.client-message-id.v1\x00"
	DomainSendIdentity       = "qim.send-identity.v1\x00"   // idempotency identity digest of a SEND
	DomainDispatchDigest     = "qim.dispatch-digest.v1\x00" // payload_digest of a GroupDispatch
	DomainGroupID            = "qim.group-id.v1\x00"        // group id from (tenant, creator, request id)
	DomainMembershipCmid     = "qim.membership-cmid.v1\x00" // client_message_id of a membership change
	DomainWriterRoute        = "qim.writer-route.v1\x00"    // rendezvous score of (conversation, writer instance)
	DomainRoomRoute          = "qim.room-route.v1\x00"      // rendezvous score of (room, RoomWriter instance)
)

// Rooms (ADR-0034).
const (
	// RoomBufferEventsDefault is how many recent events a room's ring buffer keeps by default:
	// the replay window of a rejoin. Memory is about the events' bodies times this per room.
	RoomBufferEventsDefault = 1000
	// RoomBufferAgeDefault is the oldest event a ring buffer replays by default.
	RoomBufferAgeDefault = 5 * time.Minute
	// RoomSeqEpochShift places a room's first room_seq in a RoomWriter process at the Unix
	// second it instantiated the room, shifted by this much (RoomSeqBase). A RoomWriter serves
	// only from the second after its start, so a restarted or moved room continues above every
	// room_seq its previous owner issued, as long as that owner issued fewer than 2^30 events
	// per second of the room's life and the clocks agree within a second; the jump is the gap
	// clients see. 2^33 seconds of headroom: year 2242.
	RoomSeqEpochShift = 30
	// MaxJoinedRoomsPerConnection bounds the rooms one connection may be joined to at once; a
	// JOIN_ROOM beyond it is refused RATE_LIMITED.
	MaxJoinedRoomsPerConnection = 16
	// RoomEventsBatchMax is the most events one ROOM_EVENTS frame carries.
	RoomEventsBatchMax = 256
	// RoomReplayMaxBytes bounds the encoded events of one join's replay. A replay cut by it keeps
	// the newest events and reports replay_truncated. The gateway queues a join's answer and
	// replay whatever its room queue holds (they are the server's own burst, not the member
	// falling behind), so this is also what a join may add to that queue.
	RoomReplayMaxBytes = 2 << 20
)
