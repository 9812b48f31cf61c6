package loadgen

import (
	"maps"
	"reflect"
	"sync/atomic"
	"time"
)

// SchemaVersion is the version of the JSON report (doc.go documents it). Bump it when a field
// changes meaning; adding a field does not.
const SchemaVersion = 1

// Report is the JSON result of one run (schema in doc.go).
type Report struct {
	SchemaVersion    int                       `json:"schema_version"`
	Label            string                    `json:"label,omitempty"`
	StartedAt        time.Time                 `json:"started_at"`
	Config           ReportConfig              `json:"config"`
	MeasuredS        float64                   `json:"measured_s"`
	TargetRate       float64                   `json:"target_rate"`
	AchievedSendRate float64                   `json:"achieved_send_rate"`
	ArrivalRatio     float64                   `json:"arrival_ratio"`
	AckRate          float64                   `json:"ack_rate"`
	Counts           Counts                    `json:"counts"`
	FailuresByCode   map[string]int64          `json:"failures_by_code"`
	Segments         map[string]SegmentSummary `json:"segments"`
	Timeline         []Window                  `json:"timeline"`
	CPU              CPUReport                 `json:"cpu"`
	Settle           SettleReport              `json:"settle"`
	SDKLane          LaneReport                `json:"sdk_lane"`
	Group            *GroupReport              `json:"group,omitempty"` // group mode only
	Room             *RoomReport               `json:"room,omitempty"`  // room mode only
	Verdicts         []Verdict                 `json:"verdicts"`
	Errors           []string                  `json:"errors,omitempty"`
	ErrorCount       int64                     `json:"error_count"`
}

// ReportConfig echoes the run's settings (never the token secret).
type ReportConfig struct {
	Gateway           string  `json:"gateway"`
	Mode              Mode    `json:"mode"`
	GroupSize         int     `json:"group_size,omitempty"`
	RoomSize          int     `json:"room_size,omitempty"`
	RoomSenders       int     `json:"room_senders,omitempty"`
	Rate              float64 `json:"rate"`
	DurationS         float64 `json:"duration_s"`
	Connections       int     `json:"connections"`
	PingConnections   int     `json:"ping_connections"`
	BodyBytes         int     `json:"body_bytes"`
	InflightPerConn   int     `json:"inflight_per_conn"`
	QueuePerConn      int     `json:"queue_per_conn"`
	AckTimeoutS       float64 `json:"ack_timeout_s"`
	SDKClientsPercent int     `json:"sdk_clients_percent"`
	Reconnect         bool    `json:"reconnect"`
	History           bool    `json:"history"`
}

// Counts are the run's event counts; see doc.go for each field's meaning. It is the one list of
// them: the connection goroutines count into runState.live, a Counts of its own, with atomic adds
// (every field is an int64, which snapshot relies on), and the report fills the derived ones
// (Scheduled, Acked, Failed, Unknown, Delivered, Missing, the duplicates, AckMismatch,
// FailedVisible, UnmatchedEntries, Errors and the tally's part of ForeignEvents) at the end.
type Counts struct {
	Scheduled            int64 `json:"scheduled"`
	Unsent               int64 `json:"unsent"`
	Sent                 int64 `json:"sent"`
	SentInWindow         int64 `json:"sent_in_window"`
	Acked                int64 `json:"acked"`
	AckedInWindow        int64 `json:"acked_in_window"`
	Failed               int64 `json:"failed"`
	Errors               int64 `json:"errors"`
	Unknown              int64 `json:"unknown"`
	Timeouts             int64 `json:"timeouts"`
	LateAnswers          int64 `json:"late_answers"`
	StrayAnswers         int64 `json:"stray_answers"`
	ConnectionsLost      int64 `json:"connections_lost"`
	Kicked               int64 `json:"kicked"`
	InflightWaits        int64 `json:"inflight_waits"`
	Delivered            int64 `json:"delivered"`
	Missing              int64 `json:"missing"`
	RawDuplicates        int64 `json:"raw_duplicates"`
	DuplicatesAfterDedup int64 `json:"duplicates_after_dedup"`
	AckMismatch          int64 `json:"ack_mismatch"`
	FailedVisible        int64 `json:"failed_visible"`
	Pushes               int64 `json:"pushes"`
	PushEvents           int64 `json:"push_events"`
	PushDuplicates       int64 `json:"push_duplicates"`
	Pulls                int64 `json:"pulls"`
	PullErrors           int64 `json:"pull_errors"`
	OwnCopies            int64 `json:"own_copies"`
	CursorExpired        int64 `json:"cursor_expired"`
	ForeignEvents        int64 `json:"foreign_events"`
	Pings                int64 `json:"pings"`
	PingTimeouts         int64 `json:"ping_timeouts"`
	Reconnects           int64 `json:"reconnects"`
	Stored               int64 `json:"stored"`
	StoredErrors         int64 `json:"stored_errors"`
	StoredIncomplete     int64 `json:"stored_incomplete"`
	ControlEvents        int64 `json:"control_events,omitempty"`
	// UnmatchedEntries are body-less group entries pulled under a message_id no SEND_ACK named
	// (midIndex); they, and pushes left so, are in ForeignEvents too.
	UnmatchedEntries int64 `json:"unmatched_entries,omitempty"`
}

// GroupReport is the delivery side of a group-mode run, in mailbox entries: one entry per
// (message, member), the sender's own copy included, since membership is static for the run.
type GroupReport struct {
	GroupSize int `json:"group_size"`
	Groups    int `json:"groups"`
	// ExpectedEntries is acked messages × group size (members at send time).
	ExpectedEntries int64 `json:"expected_entries"`
	// DeliveredEntries counts distinct (message, member) pulled, own copies and sends of
	// unknown outcome included (= counts.delivered).
	DeliveredEntries int64 `json:"delivered_entries"`
	// LostEntries is ExpectedEntries minus the entries of acked messages pulled after the settle
	// wait (= counts.missing); LostOwnCopies is how many of them are senders' own copies.
	LostEntries   int64 `json:"lost_entries"`
	LostOwnCopies int64 `json:"lost_own_copies"`
	// EntriesInWindow are entries pulled inside the window; EntryRate = EntriesInWindow /
	// duration_s, the mailbox write rate the system sustained.
	EntriesInWindow int64   `json:"entries_in_window"`
	EntryRate       float64 `json:"entry_rate"`
}

// SegmentSummary is the whole-run distribution of one segment, milliseconds.
type SegmentSummary struct {
	Count       int64             `json:"count"`
	MinMs       float64           `json:"min_ms"`
	MeanMs      float64           `json:"mean_ms"`
	P50Ms       float64           `json:"p50_ms"`
	P90Ms       float64           `json:"p90_ms"`
	P99Ms       float64           `json:"p99_ms"`
	P999Ms      float64           `json:"p999_ms"`
	MaxMs       float64           `json:"max_ms"`
	Percentiles []PercentilePoint `json:"percentiles,omitempty"`
}

// PercentilePoint is one point of the HDR percentile curve.
type PercentilePoint struct {
	Percentile float64 `json:"p"`
	Ms         float64 `json:"ms"`
}

// Window is one point of the time series.
type Window struct {
	EndS        float64                  `json:"end_s"`
	DurS        float64                  `json:"dur_s"`
	Phase       string                   `json:"phase"` // "run" (inside the window) or "drain"
	Sent        int64                    `json:"sent"`
	Acked       int64                    `json:"acked"`
	Delivered   int64                    `json:"delivered"`
	SendRate    float64                  `json:"send_rate"`
	AckRate     float64                  `json:"ack_rate"`
	DeliverRate float64                  `json:"deliver_rate"`
	Queued      int64                    `json:"queued"`
	Inflight    int64                    `json:"inflight"`
	Segments    map[string]WindowSegment `json:"segments"`
}

// WindowSegment is one segment inside one window.
type WindowSegment struct {
	Count int64   `json:"count"`
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
}

// Gauges are sampled when a window closes.
type Gauges struct {
	Queued, Inflight int64
	Phase            string
}

// SettleReport says how the wait for late deliveries ended.
type SettleReport struct {
	WaitedS        float64 `json:"waited_s"`
	MissingAtStart int64   `json:"missing_at_start"`
	Complete       bool    `json:"complete"` // every ACKed message was pulled
}

// report assembles the Report once every connection goroutine has ended.
func (r *runState) report(ph *phases, rate float64, conns int, lane LaneReport) *Report {
	var t tally
	for _, c := range ph.conns {
		t.add(c.role.ledger().tally())
	}
	cfg := &r.cfg
	win := cfg.Duration.Seconds()
	rep := &Report{
		SchemaVersion: SchemaVersion, Label: cfg.Label, StartedAt: ph.start.UTC(),
		Config: ReportConfig{Gateway: cfg.Gateway, Mode: cfg.Mode, GroupSize: cfg.GroupSize, Rate: rate, DurationS: win, Connections: conns,
			PingConnections: cfg.PingConnections, BodyBytes: cfg.BodyBytes, InflightPerConn: cfg.InflightPerConn,
			QueuePerConn: cfg.QueuePerConn, AckTimeoutS: cfg.AckTimeout.Seconds(), SDKClientsPercent: cfg.SDKClientsPercent,
			Reconnect: cfg.Reconnect, History: cfg.History != nil},
		MeasuredS:        ph.end.Sub(ph.start).Seconds(),
		TargetRate:       rate,
		AchievedSendRate: float64(atomic.LoadInt64(&r.live.SentInWindow)) / win,
		AckRate:          float64(atomic.LoadInt64(&r.live.AckedInWindow)) / win,
		Counts:           r.counts(ph, t),
		Segments:         map[string]SegmentSummary{},
		Timeline:         r.rec.Windows(),
		Settle:           ph.settle,
		SDKLane:          lane,
	}
	rep.ArrivalRatio = rep.AchievedSendRate / rate
	for s := range numSegments {
		rep.Segments[s.String()] = r.rec.Summary(s)
	}
	r.failMu.Lock()
	rep.FailuresByCode = maps.Clone(r.fails)
	r.failMu.Unlock()
	for _, n := range rep.FailuresByCode {
		rep.Counts.Errors += n
	}
	r.errMu.Lock()
	rep.Errors, rep.ErrorCount = append([]string(nil), r.errs...), r.nErr
	r.errMu.Unlock()
	rep.CPU = cpuReport(ph.cpuBefore, ph.cpuAfter, rep.MeasuredS, rep.Counts.AckedInWindow)
	if cfg.Mode == ModeGroup {
		rep.Group = r.groupReport(t, win)
		if n := rep.Group.EntriesInWindow; n > 0 {
			rep.CPU.MsPerEntry = rep.CPU.TotalS * 1000 / float64(n)
		}
	}
	rep.Verdicts = Evaluate(rep, cfg.Thresholds)
	return rep
}

// counts is the report's Counts: the live ones as counted, then the ones the end of the run
// derives (from the flows' tally, the schedule and the message-id index).
func (r *runState) counts(ph *phases, t tally) Counts {
	c := r.live.snapshot()
	unPulled, unPushed := r.mids.unmatched()
	c.Scheduled = ph.sched.Scheduled
	c.Acked, c.Failed, c.Unknown = t.acked, t.failed, t.unknown
	c.Delivered, c.Missing, c.RawDuplicates = t.delivered, t.missing, t.rawDuplicates
	c.DuplicatesAfterDedup, c.AckMismatch, c.FailedVisible = t.dupAfterDedup, t.ackMismatch, t.failedVisible
	c.PushDuplicates = t.pushDuplicates
	c.ForeignEvents += t.foreign + unPulled + unPushed
	c.UnmatchedEntries = unPulled
	return c
}

// snapshot reads every field of a live Counts with an atomic load, so it may run while
// connection goroutines still count; the list of fields is the struct's own.
func (c *Counts) snapshot() Counts {
	var out Counts
	src, dst := reflect.ValueOf(c).Elem(), reflect.ValueOf(&out).Elem()
	for i := range src.NumField() {
		dst.Field(i).SetInt(atomic.LoadInt64(src.Field(i).Addr().Interface().(*int64)))
	}
	return out
}

func (r *runState) groupReport(t tally, win float64) *GroupReport {
	n := r.probe.entriesInWindow.Load()
	return &GroupReport{GroupSize: r.cfg.GroupSize, Groups: len(r.groups), ExpectedEntries: t.expected,
		DeliveredEntries: t.delivered, LostEntries: t.missing, LostOwnCopies: t.lostOwn, EntriesInWindow: n,
		EntryRate: float64(n) / win}
}
