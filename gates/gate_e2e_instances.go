package gates

import (
	"context"

	"github.com/qim-dev/qim/gates/svc"
)

// instanceWork is, per scaled service, a counter every instance must have moved after the
// scenarios (each carried part of the traffic) and one that must have stayed zero (no request
// reached a node that does not own its user).
var instanceWork = map[string]struct{ moved, zero []string }{
	svc.Writer:  {moved: []string{"qim_writer_commits_total"}},
	svc.Mailbox: {moved: []string{"qim_mailbox_dispatches_materialized_total", "qim_mailbox_pulls_total"}, zero: []string{"qim_mailbox_unowned_requests_total"}},
	svc.Session: {moved: []string{"qim_session_records_applied_total", "qim_session_requests_total"}, zero: []string{"qim_session_unowned_requests_total"}},
	// Pushes reach every gateway only if the MailboxNodes route them by qim.presence.
	svc.Gateway: {moved: []string{"qim_gateway_auths_total", "qim_gateway_push_targets_total"}},
}

// judgeInstances checks that a deployment of several instances really spread the scenarios'
// work: a gateway that routed everything to instance 1 would pass every scenario and prove
// nothing about the others.
func judgeInstances(ctx context.Context, r *Result, set *svc.Set) {
	if set.Instances() < 2 {
		return
	}
	for _, service := range svc.Scaled {
		w := instanceWork[service]
		for _, name := range set.Instance(service) {
			for _, family := range w.moved {
				v, err := set.Metric(ctx, name, family)
				r.Check(name+" "+family+" > 0", err == nil && v > 0, "%v (scrape: %v): every instance carries part of the traffic", v, err)
			}
			for _, family := range w.zero {
				v, err := set.Metric(ctx, name, family)
				r.Check(name+" "+family+" = 0", err == nil && v == 0, "%v (scrape: %v): no request reached a node that does not own its user", v, err)
			}
		}
	}
}
