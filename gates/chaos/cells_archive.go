package chaos

import (
	"time"

	"github.com/qim-dev/qim/gates/stack"
	"github.com/qim-dev/qim/gates/svc"
)

// The archive cells' settings. The writer trims on a hot window far shorter than production's,
// so the trim runs inside a cell at all and the CQL outage is a real test of "nothing trimmed
// that is not archived" rather than of an idle trim.
const (
	cqlDownFor       = 20 * time.Second
	cqlCellWindow    = 60 * time.Second // fault at 8 s, 20 s down, the restart, load after it
	cellHotWindow    = 3 * time.Second
	cellTrimMargin   = time.Second
	cellTrimInterval = 500 * time.Millisecond
	// trimSettle is how long the trim may still move after the archive watermark froze: it
	// reaches T − margin within a hot window of the fault and a tick (all of it archived).
	trimSettle = cellHotWindow + 2*cellTrimInterval
)

// archiverKillCell SIGKILLs the HistoryArchiver after a batch's message_records were
// acknowledged and before any of its history_index rows: the restart replays the batch from the
// committed position (plain idempotent INSERTs), and the archive audit then finds every committed
// message of the cell's Outbox range archived, none overwritten.
func archiverKillCell() Cell {
	c := failpointCell("archiver-kill-mid-batch",
		"SIGKILL the HistoryArchiver between a batch's message_records and its history_index rows",
		svc.Archiver, fpArchiverMidBatch, true)
	c.NeedsCQL = true
	c.Env = shortHotWindowEnv()
	c.Watch = func() Watch { return &trimWatch{margin: cellTrimMargin} }
	return c
}

// cqlKillCell SIGKILLs the CQL node under load and restarts it 20 s later. The commit path never
// touches CQL, so sends must go on at the offered rate; the archive watermark freezes, so the
// trim must stop at it; after the restart the archiver must catch up and the trim resume.
func cqlKillCell() Cell {
	return Cell{Name: "cql-kill",
		Title:    "SIGKILL the CQL node under load, restart it 20 s later: sends go on, the trim stops at the frozen archive watermark, the archive catches up",
		NeedsCQL: true, Quick: true,
		Fault: killServer(stack.ServerCQL), Hold: cqlDownFor, Heal: restartServer(stack.ServerCQL),
		Window: cqlCellWindow, Env: shortHotWindowEnv(),
		Watch: func() Watch {
			return &trimWatch{margin: cellTrimMargin, frozenAfter: trimSettle, sendsGoOn: true}
		}}
}

func shortHotWindowEnv() map[string][]string {
	return map[string][]string{svc.Writer: {
		"QIM_HISTORY_HOT_WINDOW=" + cellHotWindow.String(),
		"QIM_HISTORY_TRIM_MARGIN=" + cellTrimMargin.String(),
		"QIM_HISTORY_TRIM_INTERVAL=" + cellTrimInterval.String(),
	}}
}
