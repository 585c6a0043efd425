package gpu

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// DefaultSampleInterval is how often a Sampler reads the GPUs when its
// config does not say: as often as the agent heartbeats, and more often
// than Prometheus usually scrapes.
const DefaultSampleInterval = 5 * time.Second

// Sample is the outcome of one Read of all GPUs.
type Sample struct {
	Devices []Device      // nil when Err is set; shared, so read only
	At      time.Time     // when the read started; zero before the first read
	Took    time.Duration // how long the read took
	Err     error         // why the read failed, nil when it did not
}

// SamplerConfig tunes a Sampler. The zero value works.
type SamplerConfig struct {
	Interval time.Duration // between reads; DefaultSampleInterval when zero
	Logger   *slog.Logger  // told when reading starts and stops failing; discarded when nil
	// Owners, when set, names the owner of each GPU process after every
	// read (ProcOwners("/proc") on a node); a process it cannot name (one
	// that has just exited) keeps OwnerKnown false.
	Owners func(pid int) (Owner, error)
}

// Sampler reads the GPUs on an interval and keeps the latest Sample, so
// that a Prometheus scrape and a heartbeat never wait on NVML and never
// make it read more often than the interval. This is also how DCGM
// exporter works: it samples on an interval and serves the last values.
type Sampler struct {
	reader      Reader
	owners      func(pid int) (Owner, error)
	interval    time.Duration
	log         *slog.Logger
	readSeconds prometheus.Histogram

	readMu sync.Mutex // one Read at a time: Run and a caller's Refresh may overlap
	mu     sync.Mutex
	latest Sample
}

// NewSampler returns a Sampler over r. Call Run to start it.
func NewSampler(r Reader, cfg SamplerConfig) *Sampler {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultSampleInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Sampler{
		reader:   r,
		owners:   cfg.Owners,
		interval: cfg.Interval,
		log:      cfg.Logger.With("subsystem", "gpu"),
		readSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "gpucal_agent_gpu_read_seconds",
			Help:    "Time taken to read all GPUs once through NVML.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 7), // 1 ms to 4 s
		}),
	}
}

// Run reads the GPUs now and then every interval until ctx ends. A failed
// read does not stop it: the failure is kept in the Sample (and exported as
// gpucal_agent_nvml_up 0) and the next tick tries again.
func (s *Sampler) Run(ctx context.Context) error {
	ticker := time.NewTicker(s.interval)
	defer ticker.Stop()
	for {
		s.Refresh(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// Refresh reads the GPUs once, keeps the result as the latest Sample and
// returns it. A read may take at most one interval. It may be called while
// Run runs (the agent does, to see a stopped job's GPUs freed): reads are
// taken one at a time, as a Reader expects.
func (s *Sampler) Refresh(ctx context.Context) Sample {
	s.readMu.Lock()
	defer s.readMu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, s.interval)
	defer cancel()
	start := time.Now()
	devices, err := s.reader.Read(ctx)
	sample := Sample{Devices: devices, At: start.UTC(), Took: time.Since(start), Err: err}
	if err != nil {
		sample.Devices = nil
	}
	s.nameOwners(sample.Devices)
	s.readSeconds.Observe(sample.Took.Seconds())

	s.mu.Lock()
	previous := s.latest
	s.latest = sample
	s.mu.Unlock()

	s.logChange(previous, sample)
	return sample
}

// nameOwners fills in who runs each process, when the Sampler has a way
// to tell; the devices are this read's own, not yet shared.
func (s *Sampler) nameOwners(devices []Device) {
	if s.owners == nil {
		return
	}
	for i := range devices {
		for k := range devices[i].Processes {
			p := &devices[i].Processes[k]
			if o, err := s.owners(p.PID); err == nil {
				p.Owner, p.OwnerKnown = o, true
			}
		}
	}
}

// logChange logs the first read and each time reading starts or stops
// failing, not every tick.
func (s *Sampler) logChange(previous, now Sample) {
	failed := now.Err != nil
	if !previous.At.IsZero() && failed == (previous.Err != nil) {
		return
	}
	if failed {
		s.log.Warn("reading the GPUs failed; retrying every interval", "error", now.Err, "interval", s.interval)
		return
	}
	s.log.Info("reading the GPUs", "gpus", len(now.Devices), "interval", s.interval)
}

// Latest returns the most recent Sample; its At is zero before the first
// read.
func (s *Sampler) Latest() Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.latest
}
