package svc

import (
	"context"
	"fmt"
)

// OneProcessName names the process of a OneProcess deployment: `qim all`, in CPU reports too.
const OneProcessName = "all"

// StartOneProcess starts the deployment as one `qim all` process — the ConversationWriter,
// MailboxNode, FanoutCoordinator, SessionProjection and ConnectionNode in one Go runtime, each
// on its own listeners and /metrics as in separate processes — and the HistoryArchiver (not in
// `qim all`) beside it when the stack has a CQL node; it waits until every service's /healthz
// answers 200.
//
// Each of those five names then refers to the one process: Pid gives its pid, Stop or Kill of
// any of them ends all five (a crash of one service takes the others down, as in production
// under `qim all`), and LogTail reads all.log. The chaos gate's cells kill one service at a
// time, so they deploy with separate processes and never call this.
func (s *Set) StartOneProcess(ctx context.Context) error {
	if err := s.MigrateArchive(ctx); err != nil {
		return err
	}
	if err := s.StartNoWait(OneProcessName); err != nil {
		return err
	}
	s.mu.Lock()
	p := s.procs[OneProcessName]
	for _, name := range Order {
		s.procs[name] = p
	}
	delete(s.procs, OneProcessName) // Services() lists the five names; the process answers to each
	s.mu.Unlock()
	for _, name := range Order {
		if !s.runs(name) {
			continue
		}
		if err := s.WaitHealthy(ctx, name, startTimeout); err != nil {
			return fmt.Errorf("svc: qim all: %w", err)
		}
	}
	if s.ep.CQL != "" {
		return s.Start(ctx, Archiver)
	}
	return nil
}
