package scheduler

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/core/coretest"
)

const (
	every    = 30 * time.Second
	debounce = time.Second
)

// recorder stands in for Service.Replan and records when it ran, as
// offsets from the start of the bubble.
type recorder struct {
	mu    sync.Mutex
	start time.Time
	runs  []time.Duration
	err   error
}

func (r *recorder) replan(ctx context.Context, now time.Time) (core.ReplanResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runs = append(r.runs, time.Since(r.start))
	return core.ReplanResult{}, r.err
}

func (r *recorder) got() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.runs...)
}

// start runs a loop over rec in the bubble and returns a function that
// stops it and checks that Run returned nil.
func start(t *testing.T, rec *recorder, logger *slog.Logger) (*Loop, func()) {
	t.Helper()
	rec.start = time.Now()
	l := New(core.NewService(coretest.NewMemStore()), logger, every, debounce)
	l.replan = rec.replan
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	return l, func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run returned %v, want nil", err)
		}
	}
}

func TestLoop(t *testing.T) {
	tests := []struct {
		name  string
		drive func(l *Loop)
		want  []time.Duration
	}{
		{"start and period", func(l *Loop) { time.Sleep(3*every + time.Millisecond) },
			[]time.Duration{0, every, 2 * every, 3 * every}},
		{"a burst of kicks is one replan", func(l *Loop) {
			time.Sleep(5 * time.Second)
			for range 3 {
				l.Kick()
				time.Sleep(100 * time.Millisecond)
			}
			time.Sleep(2 * time.Second)
		}, []time.Duration{0, 5*time.Second + debounce}},
		{"kicks reset the period", func(l *Loop) {
			time.Sleep(20 * time.Second)
			l.Kick()
			time.Sleep(debounce + every + time.Millisecond)
		}, []time.Duration{0, 20*time.Second + debounce, 20*time.Second + debounce + every}},
		{"kicks far apart", func(l *Loop) {
			l.Kick()
			time.Sleep(3 * time.Second)
			l.Kick()
			time.Sleep(3 * time.Second)
		}, []time.Duration{0, debounce, 3*time.Second + debounce}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := &recorder{}
				l, stop := start(t, rec, nil)
				tt.drive(l)
				synctest.Wait()
				stop()
				if diff := cmp.Diff(tt.want, rec.got()); diff != "" {
					t.Errorf("replans at (-want +got):\n%s", diff)
				}
			})
		})
	}
}

func TestLoopKeepsGoingAfterErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		rec := &recorder{err: errors.New("database unavailable")}
		_, stop := start(t, rec, slog.New(slog.NewTextHandler(&logs, nil)))
		time.Sleep(2*every + time.Millisecond)
		stop()
		if got := len(rec.got()); got != 3 {
			t.Errorf("%d replans after failures, want 3", got)
		}
		if n := strings.Count(logs.String(), "replan failed"); n != 3 || !strings.Contains(logs.String(), "database unavailable") {
			t.Errorf("log:\n%s\nwant 3 failures with the cause", logs.String())
		}
	})
}

// TestLoopStartsJobs drives the real Service: a submitted job starts within
// the debounce of the kick, without waiting for the period.
func TestLoopStartsJobs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := coretest.NewEnv(core.WithClock(time.Now))
		e.AddNodes(t, coretest.Node("a100-1").GPUs(8, "NVIDIA A100-SXM4-80GB").Build())
		e.AddUsers(t, "alice")
		l := New(e.Service, nil, time.Hour, debounce)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- l.Run(ctx) }()
		synctest.Wait()

		j, err := e.Service.Submit(ctx, e.Actor(t, "alice"), coretest.Job(4, "a100").Build())
		if err != nil {
			t.Fatal(err)
		}
		l.Kick()
		synctest.Wait()
		if got := state(t, e, j.ID); got != core.JobQueued {
			t.Errorf("before the debounce the job is %s, want queued", got)
		}
		time.Sleep(debounce)
		synctest.Wait()
		if got := state(t, e, j.ID); got != core.JobStarting {
			t.Errorf("after the debounce the job is %s, want starting", got)
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
	})
}

func state(t *testing.T, e *coretest.Env, id int64) core.JobState {
	t.Helper()
	j, err := e.Service.Job(context.Background(), core.System, id)
	if err != nil {
		t.Fatal(err)
	}
	return j.State
}

// TestLoopOnReplan checks that OnReplan hears of every successful replan
// (the web calendar's live updates hang on it) and of no failed one.
func TestLoopOnReplan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		l := New(core.NewService(coretest.NewMemStore()), nil, every, debounce)
		l.replan = func(ctx context.Context, now time.Time) (core.ReplanResult, error) {
			if _, err := rec.replan(ctx, now); err != nil {
				return core.ReplanResult{}, err
			}
			return core.ReplanResult{Updated: len(rec.got())}, nil
		}
		var heard []int
		l.OnReplan(func(res core.ReplanResult, _ time.Duration) { heard = append(heard, res.Updated) })
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- l.Run(ctx) }()
		time.Sleep(every + time.Millisecond) // the start and one period: both heard
		rec.mu.Lock()
		rec.err = errors.New("database unavailable")
		rec.mu.Unlock()
		time.Sleep(every) // one failed replan: not heard
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]int{1, 2}, heard); diff != "" {
			t.Errorf("OnReplan heard (-want +got):\n%s", diff)
		}
	})
}
