package audit

import (
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qim-dev/qim/contract"
)

// Defaults of Config (audit tuning, not contract values).
const (
	defaultWindow     = 16384
	defaultRecent     = 2
	defaultMaxTracked = 1 << 20
	defaultLookback   = time.Minute
	defaultExamples   = 5
	defaultEvery      = time.Second
	maxWindow         = 1 << 20
)

// Config says where the audit reads and how much memory it may hold. Validate fills the
// defaults of zero fields; Brokers and Shards are required.
type Config struct {
	// Brokers are the Kafka-protocol brokers holding both topics.
	Brokers []string
	// Security are the brokers' SASL and TLS options (nil: plaintext without SASL).
	Security []kgo.Opt
	// OutboxTopic is the committed log (exactly one partition); default contract.TopicOutbox.
	OutboxTopic string
	// DispatchTopic is the fan-out log (partition = mailbox shard); default contract.TopicDispatch.
	DispatchTopic string
	// Shards is the deployment's mailbox shard count: the routing every dispatch is derived with.
	Shards contract.ShardCount
	// Mailbox is the mailbox Redis; nil skips the materialization pass (Result.Mailbox false).
	Mailbox *redis.Client
	// Window is how many Outbox records one join window holds (default 16,384, at most 2^20).
	// Memory grows linearly with it; smaller windows close more often, so a partition that runs
	// far ahead of the others costs more replays through the late path.
	Window int
	// Recent is how many closed windows stay in memory so that a replayed dispatch arriving after
	// its window closed is judged without re-reading the Outbox (default 2). A late dispatch of
	// an older window re-reads its record from the Outbox (a bounded chunk around it).
	Recent int
	// MaxTracked bounds the committed-without-dispatch dispatches remembered by id so a late copy
	// can still clear them (default 2^20). Beyond it, a late copy of an untracked one is counted
	// as a replay and the loss stays counted: the count may overstate, never understate.
	MaxTracked int
	// Lookback is the clock-skew allowance between the writer and the fanout hosts used to find
	// where a narrowed range starts in each dispatch partition (by record timestamp); default 1
	// min. It only matters for ranges that do not start at Outbox offset 0.
	Lookback time.Duration
	// Examples is how many examples are kept per failure kind (default 5).
	Examples int
	// Progress, when set, is called from the audit's goroutine about every ProgressEvery
	// (default 1 s) and once at the end of each pass.
	Progress      func(Progress)
	ProgressEvery time.Duration
}

// Progress is one progress report.
type Progress struct {
	Pass    string        // "dispatch" or "mailbox"
	Records int64         // Kafka records read by this pass so far
	Rate    float64       // records/s over the pass so far
	Elapsed time.Duration // since the pass started
	Done    bool          // the pass's last report
}

// Validate fills the defaults and rejects bad values.
func (c *Config) Validate() error {
	if len(c.Brokers) == 0 {
		return fmt.Errorf("%w: no brokers", ErrConfig)
	}
	if _, err := contract.NewShardCount(int(c.Shards)); err != nil {
		return fmt.Errorf("%w: shard count: %w", ErrConfig, err)
	}
	if c.OutboxTopic == "" {
		c.OutboxTopic = contract.TopicOutbox
	}
	if c.DispatchTopic == "" {
		c.DispatchTopic = contract.TopicDispatch
	}
	if c.OutboxTopic == c.DispatchTopic {
		return fmt.Errorf("%w: the Outbox and dispatch topics are both %q", ErrConfig, c.OutboxTopic)
	}
	switch {
	case c.Window < 0 || c.Window > maxWindow:
		return fmt.Errorf("%w: window %d not in [1, %d]", ErrConfig, c.Window, maxWindow)
	case c.Recent < 0 || c.MaxTracked < 0 || c.Lookback < 0 || c.Examples < 0 || c.ProgressEvery < 0:
		return fmt.Errorf("%w: negative recent windows, tracked ids, lookback, examples or progress interval", ErrConfig)
	}
	c.fill()
	return nil
}

func (c *Config) fill() {
	if c.Recent == 0 {
		c.Recent = defaultRecent
	}
	if c.Window == 0 {
		c.Window = defaultWindow
	}
	if c.MaxTracked == 0 {
		c.MaxTracked = defaultMaxTracked
	}
	if c.Lookback == 0 {
		c.Lookback = defaultLookback
	}
	if c.Examples == 0 {
		c.Examples = defaultExamples
	}
	if c.ProgressEvery == 0 {
		c.ProgressEvery = defaultEvery
	}
}

// Range is what to audit. The zero Range is everything ever written: Outbox offset 0 up to the
// log end when the audit starts. A range that retention already cut into is incomplete (and
// fails) unless the caller narrows it explicitly to what is still there.
type Range struct {
	// From is the first Outbox offset (default 0); To the end, exclusive (0 or negative: the
	// Outbox end when the audit starts, or Ends.Outbox).
	From, To int64
	// Since and Until select the range by record time instead (Kafka ListOffsets: the first
	// record at or after each); they override From and To when set.
	Since, Until time.Time
	// Ends pins the log ends, normally those returned by WaitCaughtUp, so the audit judges
	// exactly the prefix the fanout and the MailboxNode were seen to have finished.
	Ends *Ends
}

// Ends are log end offsets (exclusive) of the Outbox and of every dispatch partition.
type Ends struct {
	Outbox   int64
	Dispatch map[int32]int64
}

// seeds are the client options that reach the brokers: the seeds and Security.
func (c Config) seeds() []kgo.Opt {
	return append([]kgo.Opt{kgo.SeedBrokers(c.Brokers...)}, c.Security...)
}
