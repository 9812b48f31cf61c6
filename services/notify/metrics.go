package notify

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/qim-dev/qim/services/internal/obs"
)

// Seconds buckets: 1 ms to ~65 s covers a local stand-in and a provider near its timeout.
var secondsBuckets = prometheus.ExponentialBuckets(0.001, 2, 17)

// metrics are the NotificationService's instruments. No label carries a user, device, token or
// message id.
type metrics struct {
	notifications   *prometheus.CounterVec // platform, outcome
	skipped         *prometheus.CounterVec // reason
	retries         *prometheus.CounterVec // platform
	providerSeconds *prometheus.HistogramVec
	markFailed      prometheus.Counter
	badRecords      prometheus.Counter
	badRegs         prometheus.Counter
	batches         prometheus.Counter
	batchFailures   prometheus.Counter
	badges          *prometheus.CounterVec // outcome
	feed            prometheus.Counter
	feedFailures    prometheus.Counter
}

func newMetrics(r *obs.Registry) *metrics {
	return &metrics{
		notifications: r.CounterVec("qim_notify_notifications_total",
			"Notifications that ended, by platform and outcome: accepted, token_invalid (registration removed), refused, given_up.", "platform", "outcome"),
		skipped: r.CounterVec("qim_notify_skipped_total",
			"Recipients or devices not notified, by reason: sender, control, online, no_tokens, no_provider, duplicate.", "reason"),
		retries: r.CounterVec("qim_notify_retries_total", "Provider requests sent again after a retryable failure.", "platform"),
		providerSeconds: r.HistogramVec("qim_notify_provider_request_seconds",
			"One provider request, from send to answer or failure.", secondsBuckets, "platform"),
		markFailed: r.Counter("qim_notify_done_mark_failures_total",
			"Accepted notifications whose done mark could not be written (a replay would send them again)."),
		badRecords: r.Counter("qim_notify_bad_dispatch_records_total",
			"qim.dispatch records that did not decode, skipped (the MailboxNode reports them as invariant violations)."),
		badRegs: r.Counter("qim_notify_bad_registrations_total", "Stored push registrations that did not decode, skipped."),
		batches: r.Counter("qim_notify_batches_total", "qim.dispatch batches whose notifications all ended and whose positions were stored."),
		badges: r.CounterVec("qim_notify_badges_total",
			"Badge lookups (Session.Badge), by outcome: exact, saturated (a lower bound), failed (sent without a badge).", "outcome"),
		feed: r.Counter("qim_notify_feed_records_total", "FeedMessages produced to the post-send feed topic and acknowledged."),
		feedFailures: r.Counter("qim_notify_feed_failures_total",
			"Attempts of a feed batch (produce and position commit) that failed and were retried."),
		batchFailures: r.Counter("qim_notify_batch_failures_total",
			"Attempts of a batch that failed (Redis or the position commit) and were retried."),
	}
}

// InvariantCounters lists the invariant counters the NotificationService registers: none. It
// holds no durable fact of its own; what it must not break (one notification per message and
// device, nothing on the commit path) is shown by its tests and the chaos cell.
func InvariantCounters() []string {
	reg := obs.NewRegistry("notify")
	newMetrics(reg)
	return reg.InvariantNames()
}
