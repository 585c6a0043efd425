package gpu

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// scriptedReader answers each Read with the next outcome of its script,
// then repeats the last one.
type scriptedReader struct {
	script []error
	reads  atomic.Int64 // read by the test while the sampler reads
}

func (r *scriptedReader) Read(context.Context) ([]Device, error) {
	n := int(r.reads.Add(1))
	err := r.script[min(n-1, len(r.script)-1)]
	if err != nil {
		return twoH100s(), err // a failed read's devices must not be kept
	}
	return twoH100s(), nil
}

func (r *scriptedReader) Close() error { return nil }

func TestSamplerRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lost := errors.New("GPU 1 (GPU-1…): GetMemoryInfo: ERROR_GPU_IS_LOST")
		r := &scriptedReader{script: []error{nil, lost, nil}}
		s := NewSampler(r, SamplerConfig{Interval: 5 * time.Second})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- s.Run(ctx) }()

		type want struct {
			reads   int
			devices int
			failed  bool
		}
		steps := []struct {
			after time.Duration
			want  want
		}{
			{0, want{reads: 1, devices: 2}},
			{5 * time.Second, want{reads: 2, failed: true}},
			{5 * time.Second, want{reads: 3, devices: 2}},
		}
		start := time.Now()
		for _, step := range steps {
			time.Sleep(step.after)
			synctest.Wait()
			latest := s.Latest()
			got := want{reads: int(r.reads.Load()), devices: len(latest.Devices), failed: latest.Err != nil}
			if got != step.want {
				t.Errorf("at %v: got %+v, want %+v", time.Since(start), got, step.want)
			}
			if !latest.At.Equal(time.Now().UTC()) {
				t.Errorf("at %v: latest sample taken at %v, want now", time.Since(start), latest.At)
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run returned %v after its context ended, want nil", err)
		}
	})
}

func TestSamplerLatestBeforeFirstRead(t *testing.T) {
	s := NewSampler(&fixedReader{}, SamplerConfig{})
	if got := s.Latest(); !got.At.IsZero() || got.Devices != nil || got.Err != nil {
		t.Errorf("Latest before any read = %+v, want the zero Sample", got)
	}
}

// TestSamplerNamesOwners: with Owners set, every process read gets its
// owner when one can be told, and none otherwise.
func TestSamplerNamesOwners(t *testing.T) {
	r := &scriptedReader{script: []error{nil}}
	owners := func(pid int) (Owner, error) {
		if pid == twoH100s()[0].Processes[0].PID {
			return Owner{UID: 1000, User: "ada"}, nil
		}
		return Owner{}, errors.New("exited")
	}
	sample := NewSampler(r, SamplerConfig{Owners: owners}).Refresh(t.Context())
	var known, unknown int
	for _, d := range sample.Devices {
		for _, p := range d.Processes {
			switch {
			case p.OwnerKnown && p.Owner == (Owner{UID: 1000, User: "ada"}):
				known++
			case !p.OwnerKnown && p.Owner == (Owner{}):
				unknown++
			default:
				t.Errorf("process %d: owner %+v known %t", p.PID, p.Owner, p.OwnerKnown)
			}
		}
	}
	if known != 1 {
		t.Errorf("%d processes named, want 1 (and %d not)", known, unknown)
	}
}

// overlapReader notes whether two Reads ever overlap.
type overlapReader struct {
	in, overlaps atomic.Int64
}

func (r *overlapReader) Read(context.Context) ([]Device, error) {
	if r.in.Add(1) > 1 {
		r.overlaps.Add(1)
	}
	defer r.in.Add(-1)
	time.Sleep(time.Millisecond)
	return twoH100s(), nil
}

func (r *overlapReader) Close() error { return nil }

// TestSamplerRefreshWhileRunning: Refresh called while Run runs never
// reads at the same time as Run.
func TestSamplerRefreshWhileRunning(t *testing.T) {
	r := &overlapReader{}
	s := NewSampler(r, SamplerConfig{Interval: time.Millisecond})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	for range 50 {
		s.Refresh(t.Context())
	}
	cancel()
	<-done
	if n := r.overlaps.Load(); n != 0 {
		t.Errorf("%d reads overlapped another", n)
	}
}
