package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/chaos"
	"github.com/qim-dev/qim/gates/e2e"
)

// livingDocs describe HEAD, so every count they state must be the registries' today. ADRs,
// perf.md and chaos-stability.md record what held when they were written and keep their
// numbers; protocol.md, config.md and contract-constants.md are generated from the code.
var livingDocs = []string{"README.md", "docs/architecture.md", "docs/status.md", "docs/deployment.md"}

// number is a count as prose writes it: digits (1,000 too) or a word up to twenty.
const number = `(\d[\d,]*|zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|` +
	`thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty)`

var numberWords = strings.Split("zero one two three four five six seven eight nine ten eleven twelve "+
	"thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty", " ")

func parseNumber(s string) int {
	s = strings.ToLower(s)
	for i, w := range numberWords {
		if s == w {
			return i
		}
	}
	n, err := strconv.Atoi(strings.ReplaceAll(s, ",", ""))
	if err != nil {
		return -1
	}
	return n
}

// phrase compiles a count's wording: the number first, then words; a space matches any run of
// white space, because a Markdown paragraph may wrap between the number and its noun.
func phrase(words string) *regexp.Regexp {
	return regexp.MustCompile(`(?i)\b` + number + `\s+` + strings.ReplaceAll(words, " ", `\s+`) + `\b`)
}

// A count is a number the docs state and a registry decides.
type count struct {
	what string
	in   *regexp.Regexp // the first group is the stated number
	want int
}

// registryCounts lists the counts in matching order: a narrower wording ("two cells under group
// load") comes before the broader one ("21 cells") it would otherwise also satisfy, because each
// number is judged by the first count that matches it and then hidden from the rest.
func registryCounts(t *testing.T) []count {
	scenarios := gateScenarios(t)
	return []count{
		{"group e2e scenarios (gate 4's group-* scenarios)", phrase("group scenarios"), withPrefix(scenarios, "group-")},
		{"room e2e scenarios (gate 4's room-* scenarios)", phrase("room scenarios"), withPrefix(scenarios, "room-")},
		{"tiered-history e2e scenarios (e2e.TieredScenarios)", phrase("tiered-history scenarios"), len(e2e.TieredScenarios())},
		{"instance e2e scenarios (e2e.InstancesScenarios)", phrase("instance scenarios"), len(e2e.InstancesScenarios())},
		{"e2e scenarios of gate 4 (gates/gate_e2e.go)", phrase("functional scenarios"), len(scenarios)},
		{"chaos cells under group load (chaos.Cells, GroupSize set)", phrase("cells under group load"),
			cellsWhere(func(c chaos.Cell) bool { return c.GroupSize > 0 })},
		{"chaos cells under room load (chaos.Cells, RoomSize set)", phrase("cells? under room load"),
			cellsWhere(func(c chaos.Cell) bool { return c.RoomSize > 0 })},
		{"chaos archive cells (chaos.Cells, NeedsCQL)", phrase("archive cells"), cellsWhere(func(c chaos.Cell) bool { return c.NeedsCQL })},
		{"nightly chaos cells (chaos.Cells, Nightly)", phrase("nightly cells"), cellsWhere(func(c chaos.Cell) bool { return c.Nightly })},
		{"chaos cells (chaos.Cells)", phrase("(?:fault |chaos )?cells"), len(chaos.Cells())},
		{"release gates (release.Registry)", phrase("(?:release )?gates"), len(gateNames())},
		{"opcodes served (contract.Opcodes, Served)", regexp.MustCompile(`(?i)\bserves\s+` + number + `\s+of\s+the\b`), servedOpcodes()},
		{"opcodes (contract.Opcodes)", phrase("opcodes"), len(contract.Opcodes())},
	}
}

// unbacked finds a count of gates, scenarios, cells or opcodes that no registry count claimed:
// a number added to the prose in a new wording must get a registry, or it drifts unseen.
var unbacked = regexp.MustCompile(`(?i)\b` + number + `\s+(?:[\w-]+\s+)?(?:gates|scenarios|cells|opcodes)\b`)

type doc struct{ path, text string }

func readLivingDocs(t *testing.T) []doc {
	t.Helper()
	var out []doc
	for _, p := range livingDocs {
		b, err := os.ReadFile(filepath.Join("..", "..", p))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, doc{p, string(b)})
	}
	return out
}

func lineOf(text string, at int) int { return strings.Count(text[:at], "\n") + 1 }

// TestDocCountsMatchRegistries: every count of release gates, e2e scenarios, chaos cells and
// opcodes in the living docs is the one its registry holds, each count is stated somewhere (a
// count whose wording no longer matches would check nothing), and no such count is left that no
// registry backs.
func TestDocCountsMatchRegistries(t *testing.T) {
	docs := readLivingDocs(t)
	counts := registryCounts(t)
	seen := make([]int, len(counts))
	for _, d := range docs {
		text := []byte(d.text)
		for i, c := range counts {
			for _, m := range c.in.FindAllSubmatchIndex(text, -1) {
				stated := string(text[m[2]:m[3]])
				seen[i]++
				if got := parseNumber(stated); got != c.want {
					t.Errorf("%s:%d: states %s %s; the registry holds %d", d.path, lineOf(d.text, m[2]), stated, c.what, c.want)
				}
				copy(text[m[2]:m[3]], strings.Repeat(" ", m[3]-m[2]))
			}
		}
		for _, m := range unbacked.FindAllSubmatchIndex(text, -1) {
			t.Errorf("%s:%d: %q is a count no registry backs: reword it to a count of registryCounts or add one",
				d.path, lineOf(d.text, m[0]), strings.Join(strings.Fields(string(text[m[0]:m[1]])), " "))
		}
	}
	for i, c := range counts {
		if seen[i] == 0 {
			t.Errorf("no living doc states the number of %s (%q): the check of that count is blind", c.what, c.in)
		}
	}
}

// gatesTableHeader starts the gates table of docs/architecture.md, section 7.
const gatesTableHeader = "| # | gate | what it proves | status |"

var gatesTableRow = regexp.MustCompile(`^\| (\d+) \| ([a-z0-9-]+) \|`)

// TestGatesTableIsTheReleaseOrder: the gates table of architecture.md has one row per release
// gate, numbered and named as release.Registry runs them.
func TestGatesTableIsTheReleaseOrder(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), gatesTableHeader+"\n")
	if !ok {
		t.Fatalf("docs/architecture.md has no gates table (header %q)", gatesTableHeader)
	}
	var rows []string
	for _, line := range strings.Split(table, "\n")[1:] { // [0] is the separator row
		if !strings.HasPrefix(line, "|") {
			break
		}
		m := gatesTableRow.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("docs/architecture.md gates table: row %q is not | # | gate | …", line)
		}
		if want := strconv.Itoa(len(rows) + 1); m[1] != want {
			t.Errorf("docs/architecture.md gates table: row %q is numbered %s, want %s", m[2], m[1], want)
		}
		rows = append(rows, m[2])
	}
	if got, want := strings.Join(rows, " "), strings.Join(gateNames(), " "); got != want {
		t.Errorf("docs/architecture.md gates table lists %q; release.Registry runs %q", got, want)
	}
}

// gateRef is "gate 7 (`redis-artifacts`)" or "gate 4 `e2e`": a gate's number with its name.
var gateRef = regexp.MustCompile("(?i)\\bgate\\s+(\\d+)\\s+\\(?`([a-z0-9-]+)`")

// TestGateNumbersNameTheirGate: where a living doc gives a gate's number with its name, the
// release order puts that gate at that number.
func TestGateNumbersNameTheirGate(t *testing.T) {
	names := gateNames()
	refs := 0
	for _, d := range readLivingDocs(t) {
		for _, m := range gateRef.FindAllStringSubmatchIndex(d.text, -1) {
			refs++
			n, _ := strconv.Atoi(d.text[m[2]:m[3]])
			name := d.text[m[4]:m[5]]
			if n < 1 || n > len(names) || names[n-1] != name {
				t.Errorf("%s:%d: gate %d is called %q; release.Registry runs %v", d.path, lineOf(d.text, m[0]), n, name, names)
			}
		}
	}
	if refs == 0 {
		t.Fatal("no living doc names a gate with its number: the pattern is blind")
	}
}

var (
	opcodeValue    = regexp.MustCompile(`\b([A-Z][A-Z_]*[A-Z]) is (0x[0-9A-Fa-f]{4})\b`)
	opcodeFamilies = regexp.MustCompile(`(?s)grouped by family \(([^)]*)\)`)
	familyByte     = regexp.MustCompile(`0x([0-9A-Fa-f]{2})\s`)
)

// TestOpcodeFactsMatchTheTable: an opcode value architecture.md states ("LEAVE_GROUP is 0x0A04")
// is the table's, and its list of families is the table's families, no more and no fewer.
func TestOpcodeFactsMatchTheTable(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	byName := map[string]contract.Opcode{}
	families := map[uint8]bool{}
	for _, o := range contract.Opcodes() {
		byName[o.Name] = o.Op
		families[o.Op.Family()] = true
	}
	values := opcodeValue.FindAllStringSubmatch(text, -1)
	if len(values) == 0 {
		t.Fatal("docs/architecture.md states no opcode value: the pattern is blind")
	}
	for _, m := range values {
		stated, _ := strconv.ParseUint(m[2], 0, 16)
		switch op, ok := byName[m[1]]; {
		case !ok:
			t.Errorf("docs/architecture.md: %s is %s; contract.Opcodes has no %s", m[1], m[2], m[1])
		case uint64(op) != stated:
			t.Errorf("docs/architecture.md: %s is %s; contract.Opcodes has 0x%04X", m[1], m[2], uint16(op))
		}
	}
	list := opcodeFamilies.FindStringSubmatch(text)
	if list == nil {
		t.Fatal("docs/architecture.md has no \"grouped by family (…)\" list")
	}
	stated := map[uint8]bool{}
	for _, f := range familyByte.FindAllStringSubmatch(list[1], -1) {
		b, _ := strconv.ParseUint(f[1], 16, 8)
		stated[uint8(b)] = true
	}
	for f := range families {
		if !stated[f] {
			t.Errorf("docs/architecture.md: the family list %q lacks 0x%02X", list[1], f)
		}
	}
	for f := range stated {
		if !families[f] {
			t.Errorf("docs/architecture.md: the family list names 0x%02X, which contract.Opcodes does not have", f)
		}
	}
}
