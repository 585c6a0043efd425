package core

import (
	"math/rand/v2"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var histNow = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// runs returns n runs like r, each ending an hour before the next, the last
// one an hour before histNow.
func runs(n int, r Run) []Run {
	out := make([]Run, n)
	for i := range out {
		out[i] = r
		out[i].EndedAt = histNow.Add(-time.Duration(n-i) * time.Hour)
	}
	return out
}

func newHistoryOf(groups ...[]Run) *History {
	h := NewHistory(HistoryConfig{})
	for _, g := range groups {
		for _, r := range g {
			h.Observe(r)
		}
	}
	return h
}

func TestHistoryNothingYetFallsBack(t *testing.T) {
	h := NewHistory(HistoryConfig{})
	j := Job{Owner: "alice", GPUs: 8, Hints: Hints{Guess: time.Hour}}
	if diff := cmp.Diff(DefaultEstimator{}.Estimate(j, histNow), h.Estimate(j, histNow)); diff != "" {
		t.Errorf("with no history (-want +got):\n%s", diff)
	}
}

// TestHistoryLevels checks that each level answers for a job that only it
// matches, and says so in words.
func TestHistoryLevels(t *testing.T) {
	h := newHistoryOf(runs(5, Run{Owner: "alice", Project: "nlp", Name: "llama-ft", GPUs: 8, Family: "h100",
		Duration: time.Hour, Outcome: OutcomeCompleted}))
	tests := []struct {
		name string
		job  Job
		want string
	}{
		{"owner+name+gpus", Job{Owner: "alice", Project: "nlp", Name: "llama-ft", GPUs: 8},
			"history: 5 earlier runs of llama-ft by alice on 8 GPUs"},
		{"owner+name", Job{Owner: "alice", Project: "nlp", Name: "llama-ft", GPUs: 4},
			"history: 5 earlier runs of llama-ft by alice"},
		{"owner+family", Job{Owner: "alice", Project: "nlp", Name: "bert", GPUs: 4, Model: "h100-80gb"},
			"history: 5 earlier runs by alice on h100"},
		{"project+gpus", Job{Owner: "bob", Project: "nlp", Name: "llama-ft", GPUs: 8},
			"typical for 8-GPU jobs in project nlp (5 earlier runs)"},
		{"gpus", Job{Owner: "carol", Project: "cv", GPUs: 8}, "typical for 8-GPU jobs (5 earlier runs)"},
		{"everyone", Job{Owner: "carol", Project: "cv", GPUs: 2}, "typical for all jobs (5 earlier runs)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := h.Estimate(tt.job, histNow)
			want := Estimate{P50: time.Hour, P90: 75 * time.Minute, Source: tt.want, Samples: 5}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestHistoryShrinkage(t *testing.T) {
	others := runs(30, Run{Owner: "bob", GPUs: 1, Duration: time.Hour})
	tests := []struct {
		name    string
		alice   []Run
		wantP50 time.Duration
	}{
		// One odd run among ten does not move the median.
		{"odd run in a group of ten", append(runs(10, Run{Owner: "alice", Name: "x", GPUs: 1, Duration: 2 * time.Hour}),
			Run{Owner: "alice", Name: "x", GPUs: 1, Duration: 20 * time.Hour, EndedAt: histNow}), 2 * time.Hour},
		// A group of one borrows from its parents: with k = 2 its third of the weight is not enough.
		{"thin group", runs(1, Run{Owner: "alice", Name: "x", GPUs: 1, Duration: 10 * time.Hour}), time.Hour},
		// Six consistent runs outweigh the parent.
		{"enough runs", runs(6, Run{Owner: "alice", Name: "x", GPUs: 1, Duration: 10 * time.Hour}), 10 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := NewHistory(HistoryConfig{Prior: 2})
			for _, r := range append(others, tt.alice...) {
				h.Observe(r)
			}
			got := h.Estimate(Job{Owner: "alice", Name: "x", GPUs: 1}, histNow)
			if got.P50 != tt.wantP50 {
				t.Errorf("P50 %v, want %v (%s)", got.P50, tt.wantP50, got.Source)
			}
		})
	}
}

// TestHistoryCensoring checks that runs stopped from outside count as "at
// least this long" and so do not pull the median down.
func TestHistoryCensoring(t *testing.T) {
	long := runs(5, Run{Owner: "alice", Name: "x", GPUs: 1, Duration: 4 * time.Hour})
	for _, o := range []Outcome{OutcomeCompleted, OutcomeFailed, OutcomeCancelled, OutcomeKilledAtLimit} {
		t.Run(o.String(), func(t *testing.T) {
			short := runs(6, Run{Owner: "alice", Name: "x", GPUs: 1, Duration: 10 * time.Minute, Outcome: o})
			got := newHistoryOf(long, short).Estimate(Job{Owner: "alice", Name: "x", GPUs: 1}, histNow)
			want := 10 * time.Minute // six real short runs against five long ones
			if o.censored() {
				want = 4 * time.Hour
			}
			if got.P50 != want {
				t.Errorf("P50 %v, want %v", got.P50, want)
			}
		})
	}
}

var guessWeight = regexp.MustCompile(`guess weighted (\d+)%`)

// TestHistoryGuess checks that a guess is corrected by the owner's record
// and weighs more for an owner whose guesses have been consistent.
func TestHistoryGuess(t *testing.T) {
	var alice, bob []Run
	for i, r := range runs(8, Run{GPUs: 1}) {
		r.Duration = time.Duration(1+i) * 20 * time.Minute // the jobs vary
		r.Owner, r.Guess = "alice", 4*r.Duration           // but her guesses are always four times too long
		alice = append(alice, r)
		r.Owner, r.Guess = "bob", []time.Duration{10 * time.Minute, 5 * time.Hour}[i%2] // all over the place
		bob = append(bob, r)
	}
	h := newHistoryOf(alice, bob)
	a := h.Estimate(Job{Owner: "alice", GPUs: 2, Hints: Hints{Guess: 8 * time.Hour}}, histNow)
	if a.P50 != 2*time.Hour {
		t.Errorf("alice guesses 8h and runs a quarter of her guesses: P50 %v, want 2h (%s)", a.P50, a.Source)
	}
	b := h.Estimate(Job{Owner: "bob", GPUs: 2, Hints: Hints{Guess: 8 * time.Hour}}, histNow)
	weight := func(e Estimate) int {
		m := guessWeight.FindStringSubmatch(e.Source)
		if m == nil {
			t.Fatalf("source %q does not say how the guess was weighted", e.Source)
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	if wa, wb := weight(a), weight(b); wa <= wb {
		t.Errorf("alice's consistent guesses weighted %d%%, bob's erratic ones %d%%; want alice's more", wa, wb)
	}
}

// TestHistoryGuessAgainstFewRuns: one run of someone else's job says
// little; a guess is not drowned by it.
func TestHistoryGuessAgainstFewRuns(t *testing.T) {
	h := newHistoryOf(runs(1, Run{Owner: "bob", Name: "probe", GPUs: 1, Duration: 10 * time.Second}))
	e := h.Estimate(Job{Owner: "alice", Name: "train", GPUs: 2, Hints: Hints{Guess: time.Hour}}, histNow)
	m := guessWeight.FindStringSubmatch(e.Source)
	if m == nil {
		t.Fatalf("source %q does not weigh the guess", e.Source)
	}
	if n, _ := strconv.Atoi(m[1]); n < 25 || e.P50 < 2*time.Minute {
		t.Errorf("a 1h guess against one 10s run of another job: P50 %v with the guess weighted %d%%; want the guess to count (%s)", e.P50, n, e.Source)
	}
}

func TestHistoryRecency(t *testing.T) {
	h := NewHistory(HistoryConfig{HalfLife: 14 * 24 * time.Hour})
	for i := range 5 { // five runs of an hour, three months ago
		h.Observe(Run{Owner: "alice", Name: "x", GPUs: 1, Duration: time.Hour,
			EndedAt: histNow.AddDate(0, -3, 0).Add(time.Duration(i) * time.Minute)})
	}
	for _, r := range runs(3, Run{Owner: "alice", Name: "x", GPUs: 1, Duration: 3 * time.Hour}) {
		h.Observe(r)
	}
	if got := h.Estimate(Job{Owner: "alice", Name: "x", GPUs: 1}, histNow); got.P50 != 3*time.Hour {
		t.Errorf("P50 %v, want the recent 3h", got.P50)
	}
}

// TestHistoryDecay: within a group the latest runs count most, even when
// all ended within hours: five runs of an hour, then three of three hours.
func TestHistoryDecay(t *testing.T) {
	older := runs(5, Run{Owner: "alice", Name: "x", GPUs: 1, Duration: time.Hour})
	newer := runs(3, Run{Owner: "alice", Name: "x", GPUs: 1, Duration: 3 * time.Hour})
	for i := range older {
		older[i].EndedAt = older[i].EndedAt.Add(-3 * time.Hour) // before the newer ones
	}
	tests := []struct {
		name  string
		decay float64
		want  time.Duration
	}{
		{"default 0.7: the three newest outweigh the five older", 0, 3 * time.Hour},
		{"0.7", 0.7, 3 * time.Hour},
		{"1: every run counts alike, the five win", 1, time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := NewHistory(HistoryConfig{Decay: tt.decay})
			for _, r := range append(older, newer...) {
				h.Observe(r)
			}
			got := h.Estimate(Job{Owner: "alice", Name: "x", GPUs: 1}, histNow)
			if got.P50 != tt.want {
				t.Errorf("P50 %v, want %v (%s)", got.P50, tt.want, got.Source)
			}
		})
	}
}

// TestHistoryAmong: runs still under way say "at least this long" about
// the owner's similar work, count as its newest runs and add nothing to a
// group's run count; other owners' runs and groups without finished runs
// are left alone.
func TestHistoryAmong(t *testing.T) {
	h := newHistoryOf(runs(4, Run{Owner: "alice", Name: "sweep", GPUs: 8, Duration: time.Hour}))
	sweep := Job{Owner: "alice", Name: "sweep", GPUs: 8}
	under := func(owner string, hours ...float64) []Run {
		var out []Run
		for _, h := range hours {
			out = append(out, Run{Owner: owner, Name: "sweep", GPUs: 8, Duration: time.Duration(h * float64(time.Hour))})
		}
		return out
	}
	const sweeps = "history: 4 earlier runs of sweep by alice on 8 GPUs"
	tests := []struct {
		name    string
		job     Job
		running []Run
		want    Estimate
	}{
		{"none", sweep, nil, Estimate{P50: time.Hour, P90: 75 * time.Minute, Source: sweeps, Samples: 4}},
		{"one shorter than every run", sweep, under("alice", 1.0/6),
			Estimate{P50: time.Hour, P90: 75 * time.Minute, Source: sweeps + ", and 1 under way", Samples: 4}},
		// In the group, weights 1 + 0.7 + 0.49 against 0.34 + 0.24 + 0.17 +
		// 0.12 for the finished hours: 72 % is "at least 5, 6, 7 h", and
		// stays on the longest, a lower bound; the group holds 4/5 of the
		// estimate (k = 1), so P50 is 7 h.
		{"three past every run", sweep, under("alice", 5, 6, 7),
			Estimate{P50: 7 * time.Hour, P90: 7*time.Hour + 105*time.Minute, Source: sweeps + ", and 3 under way", Samples: 4}},
		{"another owner's", sweep, under("bob", 5, 6, 7), Estimate{P50: time.Hour, P90: 75 * time.Minute, Source: sweeps, Samples: 4}},
		// Carol has no finished runs: hers under way make no group, the 8-GPU jobs answer.
		{"an owner without finished runs", Job{Owner: "carol", Name: "sweep", GPUs: 8}, under("carol", 5, 6, 7),
			Estimate{P50: time.Hour, P90: 75 * time.Minute, Source: "typical for 8-GPU jobs (4 earlier runs)", Samples: 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, h.EstimateAmong(tt.job, tt.running, histNow)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if got, want := h.EstimateAmong(sweep, nil, histNow), h.Estimate(sweep, histNow); got != want {
		t.Errorf("without runs under way %+v, Estimate says %+v", got, want)
	}
}

// TestHistoryAmongGuess: runs under way also correct the owner's record
// of guesses. Alice's three runs took 40 minutes of the hour she guessed;
// three more have run two hours of it.
func TestHistoryAmongGuess(t *testing.T) {
	h := newHistoryOf(runs(3, Run{Owner: "alice", Name: "sweep", GPUs: 1, Guess: time.Hour, Duration: 40 * time.Minute}))
	j := Job{Owner: "alice", Name: "sweep", GPUs: 1, Hints: Hints{Guess: time.Hour}}
	running := runs(3, Run{Owner: "alice", Name: "sweep", GPUs: 1, Guess: time.Hour, Duration: 2 * time.Hour})
	tests := []struct {
		name    string
		running []Run
		want    time.Duration
	}{
		{"none: two thirds of the guess", nil, 40 * time.Minute},
		{"three past twice the guess", running, 2 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := h.EstimateAmong(j, tt.running, histNow); got.P50 != tt.want {
				t.Errorf("P50 %v, want %v (%s)", got.P50, tt.want, got.Source)
			}
		})
	}
}

func TestElapsedLog(t *testing.T) {
	tests := []struct {
		elapsed, want time.Duration
	}{
		{30 * time.Second, time.Second}, // under a minute: nothing yet (log of 1 s)
		{2*time.Minute + 30*time.Second, 2 * time.Minute},
		{2500 * time.Second, 40 * time.Minute},
		{2*time.Hour + 7*time.Minute, 2 * time.Hour},
		{7*time.Hour + 20*time.Minute, 7 * time.Hour},
		{77 * time.Hour, 72 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.elapsed.String(), func(t *testing.T) {
			if got := fromLog(elapsedLog(tt.elapsed)); got != tt.want {
				t.Errorf("elapsedLog(%v) = log of %v, want %v", tt.elapsed, got, tt.want)
			}
		})
	}
}

// TestHistoryInvariants feeds random runs to two Histories and checks they
// answer alike, that asking twice changes nothing, and that P90 ≥ 1.25 P50.
func TestHistoryInvariants(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	owners, names := []string{"alice", "bob", "carol", ""}, []string{"a", "b", ""}
	a, b := NewHistory(HistoryConfig{}), NewHistory(HistoryConfig{})
	job := func() Job {
		return Job{Owner: owners[rng.IntN(4)], Project: owners[rng.IntN(4)], Name: names[rng.IntN(3)],
			GPUs: 1 << rng.IntN(4), Hints: Hints{Guess: time.Duration(rng.IntN(3)) * time.Hour}}
	}
	at := histNow.AddDate(0, -6, 0)
	for i := range 2000 {
		at = at.Add(time.Duration(rng.IntN(7200)) * time.Second)
		j := job()
		r := Run{Owner: j.Owner, Project: j.Project, Name: j.Name, GPUs: j.GPUs, Guess: j.Hints.Guess,
			Duration: time.Duration(rng.ExpFloat64() * float64(time.Hour)), EndedAt: at, Outcome: Outcome(rng.IntN(4))}
		a.Observe(r)
		b.Observe(r)
		q := job()
		ea, eb := a.Estimate(q, at), b.Estimate(q, at)
		if diff := cmp.Diff(ea, eb); diff != "" {
			t.Fatalf("run %d: two Histories fed the same runs differ (-a +b):\n%s", i, diff)
		}
		if again := a.Estimate(q, at); again != ea {
			t.Fatalf("run %d: asking again gives %+v, first %+v", i, again, ea)
		}
		if ea.P50 <= 0 || float64(ea.P90) < 1.25*float64(ea.P50)-float64(time.Second) {
			t.Fatalf("run %d: P50 %v, P90 %v", i, ea.P50, ea.P90)
		}
	}
}

// TestEstimateRunning: a running job's estimate is conditioned on how long
// it has run, and a job past every run seen is never predicted to be over.
func TestEstimateRunning(t *testing.T) {
	h := NewHistory(HistoryConfig{})
	end := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for i, m := range []int{10, 20, 30, 40, 60, 20, 30} {
		h.Observe(Run{Owner: "alice", Name: "eval", GPUs: 1, Duration: time.Duration(m) * time.Minute,
			EndedAt: end.Add(time.Duration(i) * time.Hour), Outcome: OutcomeCompleted})
	}
	j := Job{Owner: "alice", Name: "eval", GPUs: 1}
	now := end.Add(10 * time.Hour)
	fresh := h.Estimate(j, now)
	if fresh.P50 != 30*time.Minute {
		t.Fatalf("P50 before it runs = %v, want 30m (the median run)", fresh.P50)
	}
	for _, tc := range []struct {
		elapsed time.Duration
		minP50  time.Duration
	}{
		{5 * time.Minute, 30 * time.Minute},  // no run was shorter: the same estimate
		{35 * time.Minute, 40 * time.Minute}, // only the 40 and 60 minute runs are left
		{2 * time.Hour, 2 * time.Hour},       // past every run: still ahead of now
	} {
		e := h.EstimateRunning(j, tc.elapsed, now)
		if e.P50 < tc.minP50 || e.P50 <= tc.elapsed || e.P90 < e.P50 {
			t.Errorf("after %v: %+v, want P50 ≥ %v and past the elapsed time, P90 ≥ P50", tc.elapsed, e, tc.minP50)
		}
	}
	// Without history the fallback is conditioned the same way.
	e := NewHistory(HistoryConfig{}).EstimateRunning(Job{GPUs: 1, Hints: Hints{Guess: time.Hour}}, 3*time.Hour, now)
	if e.P50 <= 3*time.Hour || e.P90 < e.P50 {
		t.Errorf("a guessed 1h job after 3h: %+v, want it to end after now", e)
	}
}
