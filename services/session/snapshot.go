package session

import (
	"container/list"
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/qim-dev/qim/contract"
)

// userKey names one user's list.
type userKey struct {
	tenant contract.TenantID
	user   contract.UserID
}

// row is one conversation of a list: its activity score (time_ms of the latest message_id) and id.
type row struct {
	score uint64
	conv  contract.ConversationID
}

// before reports whether a sorts before b in list order: newest activity first, equal activity by
// conversation id descending (the order ZREVRANGE gives equal scores), so the order is total and
// a page token (score, conv) names one position.
func (a row) before(b row) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	return contract.U128(a.conv).Compare(contract.U128(b.conv)) > 0
}

// source is where snapshots come from (Redis in production).
type source interface {
	// list reads the user's whole list in list order.
	list(ctx context.Context, k userKey) ([]row, error)
	// scores reads the current rows of convs; ok[i] is false for one not in the list.
	scores(ctx context.Context, k userKey, convs []contract.ConversationID) ([]row, []bool, error)
	// summaries builds the row content of every conv, or fails as a whole.
	summaries(ctx context.Context, k userKey, convs []contract.ConversationID) ([]*summary, error)
}

// snapshot is one user's list as last read, plus the row contents computed so far. It is only
// touched under its entry's serve lock.
type snapshot struct {
	rows  []row
	score map[contract.ConversationID]uint64
	sums  map[contract.ConversationID]*summary
}

func newSnapshot(rows []row) *snapshot {
	s := &snapshot{rows: rows, score: make(map[contract.ConversationID]uint64, len(rows)),
		sums: map[contract.ConversationID]*summary{}}
	for _, r := range rows {
		s.score[r.conv] = r.score
	}
	return s
}

// replace moves each of convs to its current row cur[i] (or drops it when !ok[i]) and forgets
// its cached content. It cannot fail: every read happened before.
func (s *snapshot) replace(convs []contract.ConversationID, cur []row, ok []bool) {
	for _, c := range convs {
		delete(s.sums, c)
	}
	const insertMax = 32 // beyond this many changes one sort beats repeated inserts
	if len(convs) > insertMax {
		s.replaceBulk(convs, cur, ok)
		return
	}
	for i, c := range convs {
		if old, had := s.score[c]; had {
			delete(s.score, c)
			if j, found := s.find(row{score: old, conv: c}); found {
				s.rows = slices.Delete(s.rows, j, j+1)
			}
		}
		if ok[i] {
			s.score[c] = cur[i].score
			j, _ := s.find(cur[i])
			s.rows = slices.Insert(s.rows, j, cur[i])
		}
	}
}

func (s *snapshot) replaceBulk(convs []contract.ConversationID, cur []row, ok []bool) {
	drop := make(map[contract.ConversationID]bool, len(convs))
	for _, c := range convs {
		drop[c] = true
		delete(s.score, c)
	}
	s.rows = slices.DeleteFunc(s.rows, func(r row) bool { return drop[r.conv] })
	for i, c := range convs {
		if ok[i] {
			s.score[c] = cur[i].score
			s.rows = append(s.rows, cur[i])
		}
	}
	slices.SortFunc(s.rows, func(a, b row) int {
		if a.before(b) {
			return -1
		}
		return 1
	})
}

// find returns the index of r, or where it would be inserted.
func (s *snapshot) find(r row) (int, bool) {
	return slices.BinarySearchFunc(s.rows, r, func(e, t row) int {
		switch {
		case e == t:
			return 0
		case e.before(t):
			return -1
		}
		return 1
	})
}

// window returns up to limit rows strictly after after (nil: from the top) and whether more
// follow them.
func (s *snapshot) window(after *row, limit int) ([]row, bool) {
	i := 0
	if after != nil {
		i, _ = s.find(*after)
		if i < len(s.rows) && s.rows[i] == *after {
			i++
		}
	}
	end := min(len(s.rows), i+limit)
	return s.rows[i:end], end < len(s.rows)
}

// entry is one user's place in the cache.
type entry struct {
	key   userKey
	elem  *list.Element // guarded by cache.mu
	serve sync.Mutex    // one rebuild, refresh or page of this user at a time
	snap  *snapshot     // guarded by serve
	mu    sync.Mutex    // guards dirty
	dirty map[contract.ConversationID]uint64
}

// cache keeps the list snapshots of recently active users.
//
// Invariants: a page is built from a snapshot that reflects every write whose dirty marker was
// set before the page's refresh read Redis; a marker is removed only once an installed snapshot
// covers it (a rebuild that read Redis after the marker was numbered, or a refresh that re-read
// exactly that marker's conversation); a failed rebuild, refresh or content read changes nothing
// and keeps every marker, so the request fails and the next one retries — never a partial page.
//
// How: writers (the projector after its Redis script, MARK_READ after its script) call mark,
// which numbers the marker from one global sequence and records it only if the user has an entry
// (no entry: the next request rebuilds from Redis, which already holds the write). A first page
// (no page token) applies the dirty set: one ZMSCORE for the dirty conversations, then an
// in-memory move of those rows and a drop of their cached content; continuation pages stay on
// the snapshot they started from. Row content (head, read, unread) is computed for the rows a
// page shows and cached until the conversation is marked again. Requests of one user are
// serialised by the entry's serve lock, so two refreshes never race each other.
//
// Rejected: invalidating the whole snapshot per message (a 5,000-conversation user then rebuilds
// the list and every row's unread per message), and lock-free concurrent rebuilds (they lose
// markers three ways: markers dropped while a rebuild read Redis, an invalidation deleting markers
// newer than an in-flight refresh, and a slower rebuild installing over a newer one;
// docs/adr/0010-session-snapshot-dirty-markers.md).
type cache struct {
	src   source
	max   int
	mu    sync.Mutex
	lru   *list.List // of *entry, most recent first
	byKey map[userKey]*entry
	seq   atomic.Uint64

	rebuilt, refreshed, evicted prometheus.Counter
}

func newCache(src source, max int, rebuilt, refreshed, evicted prometheus.Counter) *cache {
	return &cache{src: src, max: max, lru: list.New(), byKey: map[userKey]*entry{},
		rebuilt: rebuilt, refreshed: refreshed, evicted: evicted}
}

// entry returns k's entry, creating it, and marks it most recently used.
func (c *cache) entry(k userKey) *entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.byKey[k]; e != nil {
		c.lru.MoveToFront(e.elem)
		return e
	}
	e := &entry{key: k, dirty: map[contract.ConversationID]uint64{}}
	e.elem = c.lru.PushFront(e)
	c.byKey[k] = e
	for c.lru.Len() > c.max {
		old := c.lru.Remove(c.lru.Back()).(*entry)
		delete(c.byKey, old.key) // a request holding it finishes on it; later ones rebuild
		c.evicted.Inc()
	}
	return e
}

// mark records that conv of k changed in Redis. Call it after the write returned.
func (c *cache) mark(k userKey, conv contract.ConversationID) {
	c.mu.Lock()
	e := c.byKey[k]
	c.mu.Unlock()
	if e == nil {
		return
	}
	n := c.seq.Add(1)
	e.mu.Lock()
	e.dirty[conv] = n
	e.mu.Unlock()
}

// users is the number of cached users.
func (c *cache) users() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// page returns up to limit rows after after (nil: the first page) with their content, and
// whether more rows follow. It fails as a whole.
func (c *cache) page(ctx context.Context, k userKey, after *row, limit int) ([]row, []*summary, bool, error) {
	e := c.entry(k)
	e.serve.Lock()
	defer e.serve.Unlock()
	var err error
	switch {
	case e.snap == nil:
		err = c.rebuild(ctx, e)
	case after == nil:
		err = c.refresh(ctx, e)
	}
	if err != nil {
		return nil, nil, false, err
	}
	rows, more := e.snap.window(after, limit)
	sums, err := c.contents(ctx, e, rows)
	if err != nil {
		return nil, nil, false, err
	}
	return rows, sums, more, nil
}

// rebuild reads the whole list. Markers numbered before the read are covered by it.
func (c *cache) rebuild(ctx context.Context, e *entry) error {
	start := c.seq.Load()
	rows, err := c.src.list(ctx, e.key)
	if err != nil {
		return err
	}
	e.snap = newSnapshot(rows)
	e.mu.Lock()
	for conv, n := range e.dirty {
		if n <= start {
			delete(e.dirty, conv)
		}
	}
	e.mu.Unlock()
	c.rebuilt.Inc()
	return nil
}

// refresh applies the dirty set taken now. Markers set meanwhile (even for the same
// conversation) carry other numbers and stay.
func (c *cache) refresh(ctx context.Context, e *entry) error {
	e.mu.Lock()
	taken := make(map[contract.ConversationID]uint64, len(e.dirty))
	for conv, n := range e.dirty {
		taken[conv] = n
	}
	e.mu.Unlock()
	if len(taken) == 0 {
		return nil
	}
	convs := make([]contract.ConversationID, 0, len(taken))
	for conv := range taken {
		convs = append(convs, conv)
	}
	cur, ok, err := c.src.scores(ctx, e.key, convs)
	if err != nil {
		return err
	}
	e.snap.replace(convs, cur, ok)
	e.mu.Lock()
	for conv, n := range taken {
		if e.dirty[conv] == n {
			delete(e.dirty, conv)
		}
	}
	e.mu.Unlock()
	c.refreshed.Inc()
	return nil
}

// contents returns the content of rows, computing the missing ones in one call to the source.
func (c *cache) contents(ctx context.Context, e *entry, rows []row) ([]*summary, error) {
	out := make([]*summary, len(rows))
	var missing []contract.ConversationID
	for i, r := range rows {
		if out[i] = e.snap.sums[r.conv]; out[i] == nil {
			missing = append(missing, r.conv)
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	got, err := c.src.summaries(ctx, e.key, missing)
	if err != nil {
		return nil, err
	}
	for i, conv := range missing {
		e.snap.sums[conv] = got[i]
	}
	for i, r := range rows {
		out[i] = e.snap.sums[r.conv]
	}
	return out, nil
}
