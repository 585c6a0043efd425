package scheduler

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpucal/gpucal/core"
)

// LeaderLease is the name of the lease the server replicas of one site
// elect their leader with.
const LeaderLease = "leader"

// Elector makes one of several server replicas on one database the leader
// and runs the leader-only parts (the replan loop, the notifier, the
// watch, the scheduled posts) on it alone: it takes the lease LeaderLease
// and renews it every TTL/3; the others try as often and take it once it
// has expired. A leader whose renewal fails with less than two tries'
// time (2·TTL/3) left on its lease steps down at once, stopping its parts,
// so two replicas never lead at once (with clocks that agree to within a
// few seconds: NTP); a claim that takes longer than a try (TTL/3) fails. On shutdown it gives the
// lease up, so another takes over at once.
//
// An Elector with Always set leads from the start and takes no lease: a
// server on SQLite is the only one.
type Elector struct {
	svc    *core.Service
	holder string
	ttl    time.Duration
	always bool
	log    *slog.Logger

	leading atomic.Bool
	changes atomic.Int64
	mu      sync.Mutex
	lease   core.Lease // as last seen
}

// ElectorConfig configures an Elector.
type ElectorConfig struct {
	// Holder names this replica in the lease (host, process, a random
	// part): unique among the replicas, and new at every start.
	Holder string
	// TTL is how long a lease lasts unrenewed: how long the others wait
	// after a leader dies without giving it up. 10 s by default.
	TTL time.Duration
	// Always makes the elector lead without a lease (a single server).
	Always bool
	Logger *slog.Logger
}

// NewElector returns an elector over svc's leases.
func NewElector(svc *core.Service, cfg ElectorConfig) *Elector {
	if cfg.TTL <= 0 {
		cfg.TTL = 10 * time.Second
	}
	return &Elector{svc: svc, holder: cfg.Holder, ttl: cfg.TTL, always: cfg.Always, log: orDiscard(cfg.Logger)}
}

// Leading reports whether this replica leads now.
func (e *Elector) Leading() bool { return e.leading.Load() }

// Changes counts the times this replica became or stopped being leader.
func (e *Elector) Changes() int64 { return e.changes.Load() }

// Holder is this replica's name in the lease.
func (e *Elector) Holder() string { return e.holder }

// Leader is the holder of the lease as this replica last saw it ("" when
// it has not looked yet), this replica's own name when it leads.
func (e *Elector) Leader() string {
	if e.always || e.Leading() {
		return e.holder
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if time.Now().After(e.lease.Expires) {
		return ""
	}
	return e.lease.Holder
}

// Run takes part in the election until ctx ends and runs parts, each in
// its own goroutine, while this replica leads; they get a context that
// ends when leadership does, and Run waits for them to return before
// claiming again. A part that fails (returns an error while its context
// is live) ends Run with that error.
func (e *Elector) Run(ctx context.Context, parts ...func(context.Context) error) error {
	if e.always {
		e.become(true)
		defer e.become(false)
		return runAll(ctx, parts)
	}
	every := e.ttl / 3
	t := time.NewTicker(every)
	defer t.Stop()
	var (
		led  *running  // the parts, while this replica leads
		held time.Time // until when this replica's lease runs, by its last renewal
	)
	stepDown := func(why string) {
		if led == nil {
			return
		}
		e.become(false) // not the leader from now on, while the parts stop
		led.stop()
		led = nil
		e.log.Warn("stepped down as leader", "holder", e.holder, "why", why)
	}
	defer func() {
		stepDown("shutting down")
		// Give the lease up, so another replica takes over now rather
		// than when it expires. ctx has ended: use a short one of its own.
		rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := e.svc.ReleaseLease(rctx, LeaderLease, e.holder); err != nil {
			e.log.Warn("could not give the leader's lease up; it expires by itself", "err", err)
		}
	}()
	for {
		// A claim that hangs must not outlast the lease it renews.
		cctx, cancel := context.WithTimeout(ctx, every)
		l, err := e.svc.ClaimLease(cctx, LeaderLease, e.holder, e.ttl)
		cancel()
		now := e.svc.Now()
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			e.log.Warn("could not claim or renew the leader's lease", "err", err)
			// Another replica may take the lease once it expires. The next
			// try may fail as slowly as this one did, and the parts take a
			// moment to stop: unless two tries' time is left, stop now.
			if led != nil && held.Sub(e.svc.Now()) < 2*every {
				stepDown("the lease could not be renewed")
			}
		case l.Held(e.holder, now):
			held = l.Expires
			e.seen(l)
			if led == nil {
				led = startParts(ctx, parts)
				e.become(true)
				e.log.Info("leading", "holder", e.holder, "term", l.Term, "until", l.Expires)
			}
		default:
			e.seen(l)
			stepDown("another replica holds the lease: " + l.Holder)
		}
		var failed <-chan error
		if led != nil {
			failed = led.failed
		}
		select {
		case <-ctx.Done():
			return nil
		case err := <-failed:
			return err
		case <-t.C:
		}
	}
}

// running is the leader-only parts while they run.
type running struct {
	cancel context.CancelFunc
	failed chan error    // the first failure, if any
	done   chan struct{} // closed once every part has returned
}

// startParts runs parts in the background under a context of their own.
func startParts(ctx context.Context, parts []func(context.Context) error) *running {
	ctx, cancel := context.WithCancel(ctx)
	r := &running{cancel: cancel, failed: make(chan error, 1), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		if err := runAll(ctx, parts); err != nil {
			r.failed <- err
		}
	}()
	return r
}

// stop ends the parts and waits for them.
func (r *running) stop() {
	r.cancel()
	<-r.done
}

func (e *Elector) seen(l core.Lease) {
	e.mu.Lock()
	e.lease = l
	e.mu.Unlock()
}

func (e *Elector) become(leading bool) {
	if e.leading.Swap(leading) != leading {
		e.changes.Add(1)
	}
}

// runAll runs parts until ctx ends or one fails, and returns when all
// have: the first failure, or nil.
func runAll(ctx context.Context, parts []func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, len(parts))
	for _, p := range parts {
		go func() { errc <- p(ctx) }()
	}
	var first error
	for range parts {
		// A part that returns once its context has ended did not fail.
		if err := <-errc; err != nil && ctx.Err() == nil && first == nil {
			first = err
			cancel()
		}
	}
	return first
}
