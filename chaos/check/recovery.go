package check

// recoveryAckMs is fault → the first SEND_ACK of a send invoked at or after the fault: how
// long new sends went unacknowledged. -1 without a fault or when no such send was acked.
// Sends invoked before the fault are left out: their ack may have been in flight all along.
func recoveryAckMs(l *ledger) float64 {
	fault := l.opt.FaultUs
	if fault == 0 {
		return -1
	}
	first := int64(-1)
	for _, k := range l.keys {
		s := l.sends[k]
		if s.ok && s.invoked && s.invokeUs >= fault && (first < 0 || s.okUs < first) {
			first = s.okUs
		}
	}
	if first < 0 {
		return -1
	}
	return ms(first - fault)
}

// drainMs is fault → the delivery of the last message of the fault's backlog: the sends acked
// before the heal that had not reached their recipient when the fault began (those in flight
// at the fault and those accepted during it; a group send's delivery to its last member). -1
// without a fault, without a backlog, or when part of the backlog was never delivered (LOST
// says which).
func drainMs(l *ledger) float64 {
	fault, heal := l.opt.FaultUs, l.opt.HealUs
	if fault == 0 {
		return -1
	}
	last := int64(-1)
	for _, k := range l.keys {
		s := l.sends[k]
		if !s.ok || s.okUs >= heal {
			continue
		}
		if s.toGroup() {
			for r := range l.recipients(s) {
				b := l.boxes[boxKey{r, k}]
				if b == nil {
					return -1
				}
				if b.firstUs >= fault {
					last = max(last, b.firstUs)
				}
			}
			continue
		}
		b := l.box(s)
		switch {
		case b == nil:
			return -1
		case b.firstUs >= fault:
			last = max(last, b.firstUs)
		}
	}
	if last < 0 {
		return -1
	}
	return ms(last - fault)
}
