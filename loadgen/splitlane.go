package loadgen

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/qim-dev/qim/contract"
)

// SplitLane runs two SDK lanes side by side on one run's SDK share: second gets the given
// fraction of the clients (whole pairs, at least one pair when the share is above zero and two
// pairs are there) and of the lane's rate, first the rest, each its own users. The report sums
// both and passes only when both pass; the detail names each. It is how the perf gate drives the
// Go SDK and the TypeScript SDK under one load (loadgen/weblane).
func SplitLane(first, second Lane, share float64) Lane {
	return &splitLane{lanes: [2]Lane{first, second}, share: share}
}

type splitLane struct {
	lanes   [2]Lane
	share   float64
	mu      sync.Mutex
	started [2]bool
	errs    [2]error
	clients [2]int
}

// split is how many of clients (even) each lane gets.
func (s *splitLane) split(clients int) [2]int {
	pairs := clients / 2
	second := int(math.Round(float64(pairs) * s.share))
	if s.share > 0 && second == 0 && pairs >= 2 {
		second = 1
	}
	second = min(second, pairs)
	return [2]int{2 * (pairs - second), 2 * second}
}

func (s *splitLane) Start(ctx context.Context, env LaneEnv) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clients = s.split(env.Clients)
	first := env.FirstUser
	var errs []error
	for i, l := range s.lanes {
		n := s.clients[i]
		if n == 0 {
			continue
		}
		e := env
		e.FirstUser, e.Clients = first, n
		e.Rate = env.Rate * float64(n) / float64(env.Clients)
		first += contract.UserID(n)
		s.started[i] = true
		if s.errs[i] = l.Start(ctx, e); s.errs[i] != nil {
			errs = append(errs, s.errs[i])
		}
	}
	return errors.Join(errs...)
}

func (s *splitLane) Report() LaneReport {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := LaneReport{Passed: true, Verified: true}
	var details []string
	for i, l := range s.lanes {
		if !s.started[i] {
			continue
		}
		r := LaneReport{Detail: fmt.Sprint(s.errs[i])}
		if s.errs[i] == nil {
			r = l.Report()
		}
		out.Sent, out.Acked, out.Received = out.Sent+r.Sent, out.Acked+r.Acked, out.Received+r.Received
		out.Missing, out.Repeated, out.Failed = out.Missing+r.Missing, out.Repeated+r.Repeated, out.Failed+r.Failed
		out.Passed = out.Passed && r.Passed && s.errs[i] == nil
		out.Verified = out.Verified && r.Verified
		details = append(details, fmt.Sprintf("%d clients: %s", s.clients[i], r.Detail))
	}
	out.Detail = strings.Join(details, "; ")
	return out
}
