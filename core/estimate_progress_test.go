package core_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/core/coretest"
)

var t0 = time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)

func TestProgressReportCheck(t *testing.T) {
	tests := []struct {
		name string
		r    core.ProgressReport
		want string // "" for valid
	}{
		{"fraction", core.ProgressReport{Fraction: 0.42}, ""},
		{"nothing done yet", core.ProgressReport{}, ""},
		{"done", core.ProgressReport{Fraction: 1}, ""},
		{"steps", core.ProgressReport{Step: 120, Total: 1000}, ""},
		{"last step", core.ProgressReport{Step: 1000, Total: 1000}, ""},
		{"fraction above one", core.ProgressReport{Fraction: 1.2}, "between 0 and 1"},
		{"negative fraction", core.ProgressReport{Fraction: -0.1}, "between 0 and 1"},
		{"NaN", core.ProgressReport{Fraction: math.NaN()}, "between 0 and 1"},
		{"step past total", core.ProgressReport{Step: 1001, Total: 1000}, "past the total"},
		{"negative step", core.ProgressReport{Step: -1, Total: 10}, "negative"},
		{"negative total", core.ProgressReport{Step: 1, Total: -10}, "negative"},
		{"step without total", core.ProgressReport{Step: 5}, "needs the total"},
		{"both", core.ProgressReport{Fraction: 0.5, Step: 1, Total: 2}, "not both"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.r.Check()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Check(%+v) = %v, want nil", tt.r, err)
			case tt.want != "" && (err == nil || core.ErrorCode(err) != core.CodeInvalid || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Check(%+v) = %v, want an invalid error containing %q", tt.r, err, tt.want)
			}
		})
	}
}

func TestProgressAdvance(t *testing.T) {
	started := t0
	at := func(m int) time.Time { return started.Add(time.Duration(m) * time.Minute) }
	perMinute := func(rate float64) float64 { return rate * 60 }

	t.Run("first report averages from the start", func(t *testing.T) {
		p := core.Progress{}.Advance(core.ProgressReport{Step: 100, Total: 1000}, started, at(10))
		if p.Fraction != 0.1 || p.Step != 100 || p.Total != 1000 || !p.At.Equal(at(10)) {
			t.Errorf("progress = %+v, want 100 of 1000 at +10m", p)
		}
		if got := perMinute(p.Rate); math.Abs(got-0.01) > 1e-12 {
			t.Errorf("rate = %v per minute, want 0.01", got)
		}
	})
	t.Run("a steady job keeps its rate", func(t *testing.T) {
		var p core.Progress
		for m := 1; m <= 50; m++ {
			p = p.Advance(core.ProgressReport{Fraction: float64(m) / 100}, started, at(m))
		}
		if got := perMinute(p.Rate); math.Abs(got-0.01) > 1e-9 {
			t.Errorf("rate = %v per minute, want 0.01", got)
		}
	})
	t.Run("a job that slows down is followed", func(t *testing.T) {
		var p core.Progress
		f := 0.0
		for m := 1; m <= 60; m++ {
			speed := 0.01
			if m > 30 {
				speed = 0.005 // a straggler appears half-way
			}
			f += speed
			p = p.Advance(core.ProgressReport{Fraction: f}, started, at(m))
		}
		// The rate reflects mostly the last quarter of the run, all slow.
		if got := perMinute(p.Rate); got > 0.0056 || got < 0.005 {
			t.Errorf("rate after slowing to 0.005/min = %v per minute, want close to 0.005", got)
		}
	})
	t.Run("a restart from a checkpoint keeps the rate", func(t *testing.T) {
		p := core.Progress{}.Advance(core.ProgressReport{Fraction: 0.3}, started, at(30))
		back := p.Advance(core.ProgressReport{Fraction: 0.2}, started, at(40))
		if back.Fraction != 0.2 || back.Rate != p.Rate {
			t.Errorf("after going back: %+v, want fraction 0.2 at the old rate %v", back, p.Rate)
		}
	})
	t.Run("a report at the start says nothing of speed", func(t *testing.T) {
		p := core.Progress{}.Advance(core.ProgressReport{Fraction: 0.1}, started, started)
		if p.Rate != 0 || !p.Reported() {
			t.Errorf("progress = %+v, want reported with no rate", p)
		}
		if e := core.WithProgress(core.Estimate{P50: time.Hour, P90: 2 * time.Hour, Source: "guess"}, p, 0, started); e.P50 != time.Hour {
			t.Errorf("estimate without a rate = %+v, want the prior", e)
		}
	})
}

func TestWithProgress(t *testing.T) {
	prior := core.Estimate{P50: 10 * time.Hour, P90: 15 * time.Hour, Source: "history: 3 earlier runs of llama-ft by alice", Samples: 3}
	// A job that is f done after one hour at a steady speed needs 1/f − 1
	// hours more; the prior says ten hours in all.
	at := func(f float64, elapsed time.Duration) core.Estimate {
		started := t0
		now := started.Add(elapsed)
		p := core.Progress{}.Advance(core.ProgressReport{Step: int64(f * 1000), Total: 1000}, started, now)
		return core.WithProgress(prior, p, elapsed, now)
	}
	t.Run("no report keeps the prior", func(t *testing.T) {
		if got := core.WithProgress(prior, core.Progress{}, time.Hour, t0.Add(time.Hour)); got != prior {
			t.Errorf("WithProgress without a report = %+v, want %+v", got, prior)
		}
	})
	t.Run("no prior: the rate alone", func(t *testing.T) {
		p := core.Progress{}.Advance(core.ProgressReport{Fraction: 0.5}, t0, t0.Add(time.Hour))
		got := core.WithProgress(core.Estimate{}, p, time.Hour, t0.Add(time.Hour))
		if got.P50 != 2*time.Hour || got.P90 <= got.P50 {
			t.Errorf("half done after an hour, no prior: %+v, want P50 2h and a wider P90", got)
		}
		if got.Source != "50% done" {
			t.Errorf("source = %q, want %q", got.Source, "50% done")
		}
	})
	t.Run("the further along, the more the rate counts", func(t *testing.T) {
		// A job that takes two hours at a steady speed, reporting f done
		// after f × 2h; the prior says ten hours.
		total := 2 * time.Hour
		last := math.Inf(1)
		for _, f := range []float64{0.1, 0.25, 0.5, 0.75, 0.9} {
			elapsed := time.Duration(f * float64(total))
			e := at(f, elapsed)
			if e.P50 < total || e.P50 > prior.P50 {
				t.Errorf("f=%v: P50 %v, want between the rate's %v and the prior's %v", f, e.P50, total, prior.P50)
			}
			dist := math.Log(float64(e.P50) / float64(total))
			if dist >= last {
				t.Errorf("f=%v: P50 %v is no closer to the rate's %v than with less progress", f, e.P50, total)
			}
			last = dist
			if f == 0.9 && dist > math.Log(1.15) {
				t.Errorf("90%% done: P50 %v, want within 15%% of the rate's %v", e.P50, total)
			}
			if e.P90 <= e.P50 || e.Samples != 3 {
				t.Errorf("f=%v: %+v, want P90 above P50 and the prior's samples", f, e)
			}
		}
	})
	t.Run("words", func(t *testing.T) {
		e := at(0.62, time.Hour)
		if !strings.HasPrefix(e.Source, "62% done at 5.8 s/it (weighted ") || !strings.HasSuffix(e.Source, "), the rest from "+prior.Source) {
			t.Errorf("source = %q", e.Source)
		}
		work := prior
		work.Source = "from the work, 8.4e+20 FLOPs on 8×h100"
		p := core.Progress{}.Advance(core.ProgressReport{Fraction: 0.5}, t0, t0.Add(time.Hour))
		if got := core.WithProgress(work, p, time.Hour, t0.Add(time.Hour)).Source; !strings.HasSuffix(got, "), the rest from the work, 8.4e+20 FLOPs on 8×h100") {
			t.Errorf("source over a work estimate = %q", got)
		}
		slow := core.Progress{}.Advance(core.ProgressReport{Step: 10, Total: 100}, t0, t0.Add(10*time.Minute))
		if got := core.WithProgress(core.Estimate{}, slow, 10*time.Minute, t0.Add(10*time.Minute)).Source; got != "10% done at 60.0 s/it" {
			t.Errorf("slow job's source = %q", got)
		}
	})
	t.Run("a job that stopped reporting is not over", func(t *testing.T) {
		p := core.Progress{}.Advance(core.ProgressReport{Fraction: 0.9}, t0, t0.Add(time.Hour))
		elapsed := 5 * time.Hour // four hours of silence
		e := core.WithProgress(core.Estimate{}, p, elapsed, t0.Add(elapsed))
		if e.P50 < elapsed+time.Minute {
			t.Errorf("after four silent hours: P50 %v, want at least a minute beyond the %v run", e.P50, elapsed)
		}
	})
	t.Run("a tiny fraction is a long way off", func(t *testing.T) {
		// One step in ten million after 20 minutes: 380 years to go at
		// that speed, capped at a century, never "a minute" (overflow).
		p := core.Progress{}.Advance(core.ProgressReport{Step: 1, Total: 10_000_000}, t0, t0.Add(20*time.Minute))
		if e := core.WithProgress(core.Estimate{}, p, 20*time.Minute, t0.Add(20*time.Minute)); e.P50 < 50*365*24*time.Hour {
			t.Errorf("one step in ten million = %+v, want decades", e)
		}
	})
	t.Run("a job quiet at 100% is not about to end", func(t *testing.T) {
		p := core.Progress{}.Advance(core.ProgressReport{Fraction: 1}, t0, t0.Add(time.Hour))
		elapsed := 100 * time.Minute // forty minutes at 100 %, saving a checkpoint
		e := core.WithProgress(core.Estimate{P50: 3 * time.Hour, P90: 5 * time.Hour, Source: "guess"}, p, elapsed, t0.Add(elapsed))
		if e.P50 < elapsed+30*time.Minute {
			t.Errorf("forty minutes at 100%% = %+v, want the guess to count again (at least +30m)", e)
		}
	})
	t.Run("a prior without a band is not the surest", func(t *testing.T) {
		p := core.Progress{}.Advance(core.ProgressReport{Fraction: 0.5}, t0, t0.Add(time.Hour))
		flat := core.WithProgress(core.Estimate{P50: 10 * time.Hour, P90: 10 * time.Hour, Source: "x"}, p, time.Hour, t0.Add(time.Hour))
		banded := core.WithProgress(core.Estimate{P50: 10 * time.Hour, P90: 11 * time.Hour, Source: "x"}, p, time.Hour, t0.Add(time.Hour))
		if flat.P50 > banded.P50 {
			t.Errorf("P90 = P50 weighs more (%v) than a narrow band (%v)", flat.P50, banded.P50)
		}
	})
	t.Run("the end stays put between reports", func(t *testing.T) {
		p := core.Progress{}.Advance(core.ProgressReport{Fraction: 0.5}, t0, t0.Add(time.Hour))
		end := func(elapsed time.Duration) time.Time {
			return t0.Add(core.WithProgress(core.Estimate{}, p, elapsed, t0.Add(elapsed)).P50)
		}
		if a, b := end(time.Hour), end(90*time.Minute); !a.Equal(b) {
			t.Errorf("predicted end moved from %v to %v without a new report", a, b)
		}
	})
}

// TestReportProgress: a running job's report changes the next plan, for
// it and for the job waiting behind it; refused reports change nothing.
func TestReportProgress(t *testing.T) {
	e := newEnv(t, coretest.Node("n1").GPUs(8, a100).Build())
	running := submit(t, e, "alice", coretest.Job(8, "a100").Name("llama ft").Guess(10*time.Hour).Build())
	waiting := submit(t, e, "carol", coretest.Job(8, "a100").Guess(20*time.Hour).Build())
	replan(t, e)
	if st := job(t, e, running.ID).State; st != core.JobStarting {
		t.Fatalf("the first job is %s (%s), want starting", st, job(t, e, running.ID).Prediction.Reason)
	}
	e.Clock.Advance(time.Hour)
	replan(t, e)
	before := job(t, e, waiting.ID).Prediction.StartP50

	refused := []struct {
		name, actor string
		id          int64
		r           core.ProgressReport
		code        core.Code
	}{
		{"someone else's job", "dave", running.ID, core.ProgressReport{Fraction: 0.5}, core.CodeForbidden},
		{"a queued job", "carol", waiting.ID, core.ProgressReport{Fraction: 0.5}, core.CodeInvalid},
		{"a bad report", "alice", running.ID, core.ProgressReport{Fraction: 2}, core.CodeInvalid},
		{"a missing job", "alice", 999, core.ProgressReport{Fraction: 0.5}, core.CodeNotFound},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.Service.ReportProgress(ctx, e.Actor(t, tt.actor), tt.id, tt.r)
			if core.ErrorCode(err) != tt.code {
				t.Errorf("ReportProgress = %v, want %s", err, tt.code)
			}
			if p := job(t, e, running.ID).Progress; p.Reported() {
				t.Errorf("a refused report left progress %+v", p)
			}
		})
	}

	got, err := e.Service.ReportProgress(ctx, e.Actor(t, "alice"), running.ID, core.ProgressReport{Step: 500, Total: 1000})
	if err != nil {
		t.Fatalf("ReportProgress: %v", err)
	}
	if got.Progress.Fraction != 0.5 || !got.Progress.At.Equal(e.Clock.Now()) || got.Progress.Rate <= 0 {
		t.Errorf("returned progress %+v, want half done now with a rate", got.Progress)
	}
	replan(t, e)
	est := job(t, e, running.ID).Prediction.Estimate
	if !strings.HasPrefix(est.Source, "50% done at ") || est.P50 >= 10*time.Hour || est.P50 <= 2*time.Hour {
		t.Errorf("estimate after half the work in an hour = %+v, want between 2h and 10h, from progress", est)
	}
	if after := job(t, e, waiting.ID).Prediction.StartP50; !after.Before(before) {
		t.Errorf("the waiting job's start = %v, want earlier than %v now that the running job is faster", after, before)
	}
}
