package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/qim-dev/qim/gates/stack"
	"github.com/qim-dev/qim/gates/svc"
)

// Options configure a matrix run. Validate fills the documented defaults.
type Options struct {
	// Root is the repository root (GoTest cells run there). Default ".".
	Root string
	// Bin is the qim binary built with -tags failpoints (svc.Build). Required: a cell that
	// cannot arm its failpoint would pass without its fault.
	Bin string
	// Stack is a running stack whose servers the cells may kill; it must implement
	// stack.Faults (the process provider does). Required.
	Stack stack.Stack
	// Cells to run (Select's names, "quick" for the CI subset); empty runs the whole matrix.
	Cells []string
	// Rate is the offered load, msg/s across both lanes. Default 100: about a third of what
	// this machine class holds within the SLO, so a stall or a loss is not hidden in a queue
	// that was already overflowing before the fault.
	Rate float64
	// Connections is the number of client connections (pairs), default 40.
	Connections int
	// SDKPercent is the SDK lane's share of the connections, default 10.
	SDKPercent int
	// Window is the load window of a cell (cells may ask for longer), default 30 s.
	Window time.Duration
	// FaultAt is when, after the load started, the fault is injected. Default 8 s: the cell's
	// fault-free prefix is its baseline (the checker requires load before the fault).
	FaultAt time.Duration
	// StallAfter is the checker's N: no progress this long after the heal is STALLED. Default 10 s.
	StallAfter time.Duration
	// Settle bounds the wait for every acknowledged message after the window, default 60 s.
	Settle time.Duration
	// ReportDir receives chaos.json, chaos.html and one history log per cell. Required.
	ReportDir string
	// Repeat runs the whole selection this many times, pass after pass (stability.go), and adds
	// the per-cell stability and the per-pass verdicts to the report. Default 1. Each pass costs
	// the selection's time again: about 15 min for the whole matrix on 2 cores.
	Repeat int
	// Source says which command and tree made the run; stability.md prints it.
	Source StabilityRun
	// Progress receives one line per step; nil is silent.
	Progress io.Writer
	// Invariants judges a cell's deployment after the cell: every always-zero counter zero and
	// every /healthz 200 (gate 8's judgement, injected because gates imports this package).
	// Nil fails every cell: the third judge cannot be skipped silently.
	Invariants func(ctx context.Context, set *svc.Set) (passed bool, detail string)
}

// ErrConfig is wrapped by every option error.
var ErrConfig = errors.New("chaos: invalid options")

// Validate fills the defaults and rejects bad values.
func (o *Options) Validate() error {
	if o.Bin == "" || o.Stack == nil || o.ReportDir == "" {
		return fmt.Errorf("%w: Bin, Stack and ReportDir are required", ErrConfig)
	}
	if _, ok := o.Stack.(stack.Faults); !ok {
		return fmt.Errorf("%w: the stack (%s provider) cannot inject server faults; use the process provider", ErrConfig, o.Stack.Endpoints().Provider)
	}
	setDefault(&o.Root, ".")
	setDefault(&o.Rate, 100)
	setDefault(&o.Connections, 40)
	setDefault(&o.SDKPercent, 10)
	setDefault(&o.Window, 30*time.Second)
	setDefault(&o.FaultAt, 8*time.Second)
	setDefault(&o.StallAfter, 10*time.Second)
	setDefault(&o.Settle, 60*time.Second)
	setDefault(&o.Repeat, 1)
	if o.FaultAt >= o.Window {
		return fmt.Errorf("%w: fault at %s is not inside the %s window", ErrConfig, o.FaultAt, o.Window)
	}
	if o.Repeat < 1 {
		return fmt.Errorf("%w: repeat %d, want at least 1", ErrConfig, o.Repeat)
	}
	if o.Rate <= 0 || o.Connections < 4 {
		return fmt.Errorf("%w: rate %.0f, connections %d", ErrConfig, o.Rate, o.Connections)
	}
	return nil
}

func setDefault[T comparable](p *T, d T) {
	var zero T
	if *p == zero {
		*p = d
	}
}

// UnknownCellsError names cells Select does not know, with the ones it does.
type UnknownCellsError struct {
	Names, Known []string
}

func (e *UnknownCellsError) Error() string {
	return fmt.Sprintf("chaos: unknown cells %s (known: quick, %s)", strings.Join(e.Names, ", "), strings.Join(e.Known, ", "))
}

func cellNames(cs []Cell) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	return out
}
