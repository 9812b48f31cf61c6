package chaos

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/qim-dev/qim/gates/svc"
)

// exitingService is a deployment of one service whose first exits starts end in an exit
// while WaitHealthy waits (a writer started beside a broker that is still fenced), and whose
// later starts become healthy.
type exitingService struct {
	exits   int // starts that exit during start-up, the first one included
	starts  int // processes started, the one running before the heal included
	running bool
}

func (s *exitingService) Running(string) bool  { return s.running }
func (s *exitingService) ExitErr(string) error { return errors.New("exit status 1") }
func (s *exitingService) StartNoWait(string, ...string) error {
	if s.running {
		return svc.ErrRunning
	}
	s.starts++
	s.running = true
	return nil
}

func (s *exitingService) WaitHealthy(context.Context, string, time.Duration) error {
	if s.starts <= s.exits {
		s.running = false
		return fmt.Errorf("%w: writer (exit status 1)", svc.ErrExited)
	}
	return nil
}

// TestBringBackRestartsAServiceThatExitsWhileWaitedFor: a service running when the heal begins
// and exiting during WaitHealthy is started again and waited for (the check of Running alone,
// before the wait, failed the cell on the first such exit); one that keeps exiting fails the
// heal after healRestarts restarts, naming the service.
func TestBringBackRestartsAServiceThatExitsWhileWaitedFor(t *testing.T) {
	for _, tc := range []struct {
		exits    int
		restarts int
		fails    bool
	}{
		{exits: 0, restarts: 0},
		{exits: 1, restarts: 1},
		{exits: healRestarts, restarts: healRestarts},
		{exits: healRestarts + 1, restarts: healRestarts, fails: true},
	} {
		s := &exitingService{exits: tc.exits, starts: 1, running: true}
		var logged []string
		err := bringBack(context.Background(), s, func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }, "writer")
		if (err != nil) != tc.fails || len(logged) != tc.restarts || s.starts != 1+tc.restarts {
			t.Errorf("%d exits: err %v, %d restarts logged, %d starts; want failure %v after %d restarts",
				tc.exits, err, len(logged), s.starts, tc.fails, tc.restarts)
		}
		if tc.fails && (err == nil || !strings.Contains(err.Error(), "writer exited again")) {
			t.Errorf("%d exits: error %v does not name the service", tc.exits, err)
		}
	}
}
