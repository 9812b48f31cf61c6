package gates

import (
	"context"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/gates/stack"
	"github.com/qim-dev/qim/gates/svc"
)

// soakSample is one look at the deployment's footprint during a soak.
type soakSample struct {
	AtS   float64                   `json:"at_s"` // since the soak's load started
	Procs map[string]soakProcSample `json:"procs"`
	// The stores: Redis used_memory, the broker's and the CQL node's data directories on disk
	// (a process stack's; 0 where there is none), and the writers' commits so far.
	RedisCoreBytes    float64 `json:"redis_core_bytes"`
	RedisMailboxBytes float64 `json:"redis_mailbox_bytes"`
	KafkaBytes        float64 `json:"kafka_bytes"`
	CQLBytes          float64 `json:"cql_bytes"`
	Commits           float64 `json:"commits"`
}

// soakProcSample is what one service process exports about itself (the Go and process
// collectors every service registers); -1 where the scrape failed.
type soakProcSample struct {
	RSSBytes   float64 `json:"rss_bytes"`
	OpenFDs    float64 `json:"open_fds"`
	Goroutines float64 `json:"goroutines"`
}

// soakSampler samples a deployment and its stack until stopped.
type soakSampler struct {
	set        *svc.Set
	ep         stack.Endpoints
	core, mbox *redis.Client
	t0         time.Time

	mu      sync.Mutex
	samples []soakSample
	errs    int // samples of which some part failed
}

func newSoakSampler(set *svc.Set, ep stack.Endpoints) (*soakSampler, error) {
	s := &soakSampler{set: set, ep: ep}
	for _, c := range []struct {
		addr string
		to   **redis.Client
	}{{ep.RedisCore, &s.core}, {ep.RedisMailbox, &s.mbox}} {
		o, err := ep.RedisOptions(c.addr)
		if err != nil {
			s.close()
			return nil, err
		}
		*c.to = redis.NewClient(o)
	}
	return s, nil
}

func (s *soakSampler) close() {
	for _, c := range []*redis.Client{s.core, s.mbox} {
		if c != nil {
			_ = c.Close()
		}
	}
}

// run samples every `every` from now until ctx ends; progress gets a line a minute.
func (s *soakSampler) run(ctx context.Context, every time.Duration, progress func(soakSample)) chan struct{} {
	s.t0 = time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		lastLine := time.Now()
		for {
			smp := s.sample(context.WithoutCancel(ctx))
			if time.Since(lastLine) >= time.Minute {
				progress(smp)
				lastLine = time.Now()
			}
			select {
			case <-ctx.Done():
				return // no sample after the loads ended: their connections are gone, which is no trend
			case <-t.C:
			}
		}
	}()
	return done
}

// sample takes one soakSample and keeps it.
func (s *soakSampler) sample(ctx context.Context) soakSample {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	smp := soakSample{AtS: time.Since(s.t0).Seconds(), Procs: map[string]soakProcSample{}}
	failed := false
	for _, name := range s.set.Services() {
		ps := soakProcSample{RSSBytes: -1, OpenFDs: -1, Goroutines: -1}
		fams, err := svc.ScrapeMetrics(ctx, s.set.Addrs.Metrics[name])
		if err == nil {
			ps.RSSBytes, _ = svc.FamilySum(fams, "process_resident_memory_bytes")
			ps.OpenFDs, _ = svc.FamilySum(fams, "process_open_fds")
			ps.Goroutines, _ = svc.FamilySum(fams, "go_goroutines")
			if service, _ := svc.ServiceOf(name); service == svc.Writer {
				c, _ := svc.FamilySum(fams, "qim_writer_commits_total")
				smp.Commits += c
			}
		}
		failed = failed || err != nil
		smp.Procs[name] = ps
	}
	var err1, err2 error
	smp.RedisCoreBytes, err1 = usedMemory(ctx, s.core)
	smp.RedisMailboxBytes, err2 = usedMemory(ctx, s.mbox)
	smp.KafkaBytes = dirBytes(filepath.Join(s.ep.Dir, "data", stack.ServerKafka))
	if s.ep.CQL != "" {
		smp.CQLBytes = dirBytes(filepath.Join(s.ep.Dir, "data", stack.ServerCQL))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples = append(s.samples, smp)
	if failed || err1 != nil || err2 != nil {
		s.errs++
	}
	return smp
}

// usedMemory is Redis's used_memory.
func usedMemory(ctx context.Context, rdb *redis.Client) (float64, error) {
	info, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		return -1, err
	}
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	return -1, nil
}

// dirBytes is the disk space the files under dir take (0 when it does not exist): allocated
// blocks, not sizes, because the broker preallocates its index files sparsely (10 MiB each at
// every segment roll), which by size would read as a jump of the footprint.
func dirBytes(dir string) float64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil //nolint:nilerr // a file removed while walking (a rolled segment) is not an error
		}
		if info, ierr := d.Info(); ierr == nil && info.Mode().IsRegular() {
			if st, ok := info.Sys().(*syscall.Stat_t); ok {
				n += st.Blocks * 512
			} else {
				n += info.Size()
			}
		}
		return nil
	})
	return float64(n)
}

// snapshot returns the samples taken so far and how many had a failed part.
func (s *soakSampler) snapshot() ([]soakSample, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]soakSample(nil), s.samples...), s.errs
}
