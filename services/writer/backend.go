package writer

import (
	"context"
	"fmt"

	"github.com/qim-dev/qim/services/internal/cqlstore"
	"github.com/qim-dev/qim/services/internal/failpoint"
	"github.com/qim-dev/qim/services/internal/msgstore"
)

// openStore builds the MessageStore of the configured backend. Tiered opens the CQL archive
// (refusing a keyspace at another schema version) for reads below the hot floor and sets up the
// trim; redis says loudly that history is neither archived nor trimmed.
func (s *Service) openStore(ctx context.Context) (*msgstore.Store, error) {
	if !s.cfg.History.Tiered() {
		s.log.Warn("writer: QIM_MESSAGE_STORE_BACKEND=redis: DEVELOPMENT ONLY — history is not archived and never trimmed; Redis memory grows with every message")
		return msgstore.New(s.rdb), nil
	}
	var st *cqlstore.Store
	err := s.proc.Await(ctx, "the CQL archive", func(ctx context.Context) (err error) {
		st, err = s.cfg.History.Open(ctx)
		return err
	}, cqlstore.Refused)
	if err != nil {
		return nil, fmt.Errorf("writer: refusing to start: %w", err)
	}
	s.proc.OnClose("history archive", func() error { st.Close(); return nil })
	store := msgstore.New(s.rdb, msgstore.WithArchive(cqlstore.HistoryTier(st)))
	s.trim = &hotTrim{store: store, group: s.cfg.ArchiverGroup, window: s.cfg.HotWindow, margin: s.cfg.TrimMargin,
		interval: s.cfg.TrimInterval, log: s.log, now: failpoint.Now, m: newTrimMetrics(s.reg)}
	s.log.Info("writer: tiered history", "hot_window", s.cfg.HotWindow, "archiver_group", s.cfg.ArchiverGroup)
	return store, nil
}
