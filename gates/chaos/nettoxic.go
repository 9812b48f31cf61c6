package chaos

import (
	"time"

	"github.com/Shopify/toxiproxy/v2/toxics"
)

// cutToxic passes bytes through and ends the connection Timeout ms after it opened (or after
// the toxic reached it): a middlebox or a flaky path dropping connections every few seconds.
// Bytes still queued in the proxy are dropped with it. The connection ends with FIN, not RST:
// toxiproxy's reset_peer sends RST but drops the first bytes of every connection and so lets
// none through at all, which is a refusing link, not a resetting one.
type cutToxic struct {
	Timeout int64 `json:"timeout"` // ms
}

func (t *cutToxic) Pipe(stub *toxics.ToxicStub) {
	timer := time.NewTimer(time.Duration(t.Timeout) * time.Millisecond)
	defer timer.Stop()
	for {
		select {
		case <-stub.Interrupt:
			return
		case <-timer.C:
			stub.Close()
			return
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
			stub.Output <- c
		}
	}
}

func init() {
	toxics.Register("qim_cut", new(cutToxic))
}
