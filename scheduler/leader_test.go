package scheduler

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/core/coretest"
)

// flaky is a store that fails every call while down, as a database the
// replica has lost.
type flaky struct {
	core.Store
	down atomic.Bool
}

var errDown = errors.New("connection refused")

func (f *flaky) Update(ctx context.Context, fn func(core.Tx) error) error {
	if f.down.Load() {
		return errDown
	}
	return f.Store.Update(ctx, fn)
}

// leaders counts the replicas whose leader-only part runs, and records
// whether it ever was more than one.
type leaders struct {
	active, most atomic.Int32
}

func (l *leaders) part(ctx context.Context) error {
	n := l.active.Add(1)
	for m := l.most.Load(); n > m && !l.most.CompareAndSwap(m, n); m = l.most.Load() {
	}
	<-ctx.Done()
	l.active.Add(-1)
	return nil
}

// elect runs e with one part in the background; the function it returns
// stops it and returns Run's result.
func elect(e *Elector, part func(context.Context) error) func() error {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx, part) }()
	return func() error { cancel(); return <-done }
}

// TestElectorFailover: of two replicas one leads; when it loses the
// database it steps down before its lease expires, the other takes over
// once it has, and the two never lead at once; a leader that shuts down
// gives the lease up and the other leads at its next try.
func TestElectorFailover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := coretest.NewMemStore()
		lostA := &flaky{Store: mem}
		var ls leaders
		ttl := 15 * time.Second
		a := NewElector(core.NewService(lostA), ElectorConfig{Holder: "a", TTL: ttl})
		b := NewElector(core.NewService(mem), ElectorConfig{Holder: "b", TTL: ttl})
		stopA := elect(a, ls.part)
		synctest.Wait()
		stopB := elect(b, ls.part)
		time.Sleep(time.Minute)
		if !a.Leading() || b.Leading() || ls.active.Load() != 1 || b.Leader() != "a" {
			t.Fatalf("after a minute: a leads %v, b leads %v, %d parts running, b sees %q", a.Leading(), b.Leading(), ls.active.Load(), b.Leader())
		}

		lost := time.Now()
		lostA.down.Store(true)
		for !b.Leading() && time.Since(lost) < time.Minute {
			time.Sleep(100 * time.Millisecond)
		}
		took := time.Since(lost)
		if !b.Leading() || a.Leading() || took > ttl+ttl/3 {
			t.Fatalf("%s after a lost its database: a leads %v, b leads %v; want b within %s", took, a.Leading(), b.Leading(), ttl+ttl/3)
		}
		lostA.down.Store(false)
		time.Sleep(time.Minute)
		if a.Leading() || !b.Leading() {
			t.Errorf("once a's database is back: a leads %v, b leads %v; want b still", a.Leading(), b.Leading())
		}

		if err := stopB(); err != nil {
			t.Errorf("b's Run: %v", err)
		}
		handedOver := time.Now()
		for !a.Leading() && time.Since(handedOver) < time.Minute {
			time.Sleep(100 * time.Millisecond)
		}
		if waited := time.Since(handedOver); !a.Leading() || waited > ttl/3+time.Second {
			t.Errorf("a leads %v %s after b shut down; want within a renewal period (%s)", a.Leading(), waited, ttl/3)
		}
		if err := stopA(); err != nil {
			t.Errorf("a's Run: %v", err)
		}
		synctest.Wait()
		if m := ls.most.Load(); m != 1 || ls.active.Load() != 0 || a.Changes() != 4 || b.Changes() != 2 {
			t.Errorf("most parts at once %d, left running %d, changes a %d b %d; want 1, 0, 4, 2", m, ls.active.Load(), a.Changes(), b.Changes())
		}
	})
}

// TestElectorAlways: a single server leads from the start, without a
// lease; a failing part ends Run with its error.
func TestElectorAlways(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := NewElector(core.NewService(coretest.NewMemStore()), ElectorConfig{Holder: "solo", Always: true})
		broke := errors.New("broke")
		stop := elect(e, func(ctx context.Context) error {
			select {
			case <-time.After(time.Minute):
				return broke
			case <-ctx.Done():
				return nil
			}
		})
		synctest.Wait()
		if !e.Leading() || e.Leader() != "solo" {
			t.Errorf("leading %v, leader %q", e.Leading(), e.Leader())
		}
		time.Sleep(2 * time.Minute)
		if err := stop(); !errors.Is(err, broke) {
			t.Errorf("Run = %v, want the part's error", err)
		}
	})
}

// TestElectorPartFails: a leader-only part that fails ends Run with its
// error, having stopped the others.
func TestElectorPartFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := NewElector(core.NewService(coretest.NewMemStore()), ElectorConfig{Holder: "a", TTL: time.Second})
		broke := errors.New("broke")
		var ls leaders
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		err := e.Run(ctx, ls.part, func(context.Context) error { time.Sleep(10 * time.Second); return broke })
		if !errors.Is(err, broke) || ls.active.Load() != 0 || e.Leading() {
			t.Errorf("Run = %v, %d parts left, leading %v", err, ls.active.Load(), e.Leading())
		}
	})
}
