package contract

import (
	"regexp"
	"testing"
)

// The rows must be well formed: the doc and the gateway test read them mechanically.
func TestProtocolCasesTable(t *testing.T) {
	snake := regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	seen := map[string]bool{}
	for _, pc := range ProtocolCases() {
		if !snake.MatchString(pc.Name) || seen[pc.Name] {
			t.Errorf("case %q: name must be unique snake_case", pc.Name)
		}
		seen[pc.Name] = true
		if pc.When == "" || pc.Client == "" {
			t.Errorf("%s: When and Client must be set", pc.Name)
		}
		switch pc.Phase {
		case BeforeAuth, AfterAuth, AnyPhase:
		default:
			t.Errorf("%s: phase %d", pc.Name, pc.Phase)
		}
		switch pc.Reply {
		case OpError:
			info, ok := pc.Error.Lookup()
			if !ok || pc.Kick != 0 {
				t.Errorf("%s: ERROR reply needs a defined code and no kick reason", pc.Name)
			} else if info.SentBy == "" {
				t.Errorf("%s: %s is sent here, but its error row says this server never sends it", pc.Name, info.Name)
			}
		case OpKicked:
			if pc.Error != 0 || !pc.Closes {
				t.Errorf("%s: KICKED carries no error code and always ends the connection", pc.Name)
			}
		case 0:
			if pc.Error != 0 || pc.Kick != 0 || !pc.Closes {
				t.Errorf("%s: a case with no reply frame must close and carry no code", pc.Name)
			}
		default:
			t.Errorf("%s: reply %v is neither ERROR nor KICKED", pc.Name, pc.Reply)
		}
	}
}
