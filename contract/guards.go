package contract

// Compile-time guards for the immutable constants. Indexing a one-element array with a constant
// is a compile error unless the index is exactly 0, so each line below fails the build when its
// expression is non-zero. Changing these values silently would re-route users, re-lane mailboxes
// and reorder MailboxSeq values already stored and held by devices as cursors.
var (
	_ = [1]struct{}{}[LaneCount-64]
	_ = [1]struct{}{}[LaneCount&(LaneCount-1)]                         // power of two
	_ = [1]struct{}{}[VirtualBucketCount-65536]                        //
	_ = [1]struct{}{}[VirtualBucketCount&(VirtualBucketCount-1)]       // power of two
	_ = [1]struct{}{}[CommitBucketCount-256]                           // one hash byte
	_ = [1]struct{}{}[MessageSeqBucketWidth-1024]                      //
	_ = [1]struct{}{}[ShardEpochBits-16]                               //
	_ = [1]struct{}{}[LogOffsetBits-48]                                //
	_ = [1]struct{}{}[ShardEpochBits+LogOffsetBits-64]                 // fills a u64
	_ = [1]struct{}{}[MailboxShardsDefault&(MailboxShardsDefault-1)]   // power of two
	_ = [1]struct{}{}[VirtualBucketCount%MailboxShardsDefault]         // shards divide buckets
	_ = [1]struct{}{}[StreamWriteChunkBytes&(StreamWriteChunkBytes-1)] //
	_ = [1]struct{}{}[MaxFramePayload%StreamWriteChunkBytes]           // whole chunks
)

// Ordering guards: converting a negative constant to uint is a compile error.
const (
	_ = uint(GroupMaxMembers - MembershipEventBroadcastMaxMembers)
	_ = uint(FanoutBatchMax - FanoutBatchDefault)
	_ = uint(WriterInflightPerConnMax - WriterInflightPerConnDefault)
	_ = uint(HeartbeatForegroundMax - HeartbeatStart)
	_ = uint(HeartbeatBackgroundMax - HeartbeatForegroundMax)
	_ = uint(UnavailableDetectMax - SendAckProbeAfter)
	_ = uint(HLCWindow - 2*HLCRenewBefore)
)
