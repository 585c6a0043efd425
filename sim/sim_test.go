package sim

import (
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// tj is a trace job in whole seconds; req 0 means the trace has no
// requested time for it.
func tj(submit, gpus, dur, req int) TraceJob {
	return TraceJob{Submit: time.Duration(submit) * time.Second, GPUs: gpus,
		Duration: time.Duration(dur) * time.Second, Requested: time.Duration(req) * time.Second}
}

func traceOf(jobs ...TraceJob) Trace {
	for i := range jobs {
		jobs[i].ID = strconv.Itoa(i)
	}
	return Trace{Jobs: jobs}
}

// replay runs tr under cfg and returns the finished simulation.
func replay(t testing.TB, tr Trace, cfg Config) *simulation {
	t.Helper()
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	s, err := newSimulation(tr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.run(context.Background()); err != nil {
		t.Fatalf("%s: %v", cfg.Policy, err)
	}
	return s
}

// waits returns every job's wait in seconds, in trace order.
func waits(s *simulation) []float64 {
	var out []float64
	for _, j := range s.jobs {
		out = append(out, (j.firstStart - j.t.Submit).Seconds())
	}
	return out
}

// blocking is a head-of-line scenario on one node of 2 GPUs, with requested
// times (what EASY expects): A holds a GPU until 100; B needs both; C is
// short enough to run before A ends; D is too long to run before B's
// promised start and would take a GPU B needs; E fits before it.
var blocking = traceOf(
	tj(0, 1, 100, 100), // A
	tj(1, 2, 10, 10),   // B
	tj(2, 1, 10, 10),   // C
	tj(20, 1, 50, 200), // D
	tj(30, 1, 20, 60),  // E
)

func TestBaselineWaits(t *testing.T) {
	tests := []struct {
		policy Policy
		want   []float64
	}{
		// B waits for A; C, D and E wait behind B, then C and D start
		// together at 110 and E when C ends at 120.
		{PolicyFIFO, []float64{0, 99, 108, 90, 90}},
		// Shortest true runtime first whenever it fits: C at once, D at
		// once, E when D ends at 70, B when A ends.
		{PolicySJF, []float64{0, 99, 0, 0, 40}},
		// B is promised 100 on both GPUs. C (ends at 12) and E (ends at 90)
		// backfill; D (expected to end at 220) would delay B, so it waits.
		{PolicyEASY, []float64{0, 99, 0, 90, 0}},
	}
	for _, tt := range tests {
		t.Run(string(tt.policy), func(t *testing.T) {
			s := replay(t, blocking, Config{Nodes: 1, GPUsPerNode: 2, Policy: tt.policy})
			if diff := cmp.Diff(tt.want, waits(s)); diff != "" {
				t.Errorf("waits (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWaitBySize: the result gives each GPU count's average wait.
func TestWaitBySize(t *testing.T) {
	r, err := Run(context.Background(), blocking, Config{Nodes: 1, GPUsPerNode: 2, Policy: PolicyFIFO})
	if err != nil {
		t.Fatal(err)
	}
	// FIFO waits 0, 99, 108, 90, 90: B is the one 2-GPU job.
	want := []SizeWait{{GPUs: 1, Jobs: 4, AvgWait: 72}, {GPUs: 2, Jobs: 1, AvgWait: 99}}
	if diff := cmp.Diff(want, r.BySize); diff != "" {
		t.Errorf("waits by size (-want +got):\n%s", diff)
	}
}

func TestEASYPredictsTheStartItWillGive(t *testing.T) {
	r, err := Run(context.Background(), blocking, Config{Nodes: 1, GPUsPerNode: 2, Policy: PolicyEASY})
	if err != nil {
		t.Fatal(err)
	}
	// B is told 100 and D 110 (after B) at submission; both are right. C
	// and E started at submission and are not counted.
	want := &StartPrediction{Jobs: 2, Within10Min: 1, Within10Pct: 1, MAE: 0, P90Coverage: 1}
	if diff := cmp.Diff(want, r.StartPrediction); diff != "" {
		t.Errorf("start prediction (-want +got):\n%s", diff)
	}
}

func TestGPUCal(t *testing.T) {
	tests := []struct {
		name      string
		tr        Trace
		nodes     int
		gpn       int
		wantWaits []float64
		wantPred  *StartPrediction
	}{
		{
			// B waits for A's GPUs and is told so exactly: A's estimate is
			// its requested time.
			name:      "a job waits for the one ahead and is told when",
			tr:        traceOf(tj(0, 2, 100, 100), tj(10, 1, 30, 30)),
			nodes:     1,
			gpn:       2,
			wantWaits: []float64{0, 90},
			wantPred:  &StartPrediction{Jobs: 1, Within10Min: 1, Within10Pct: 1, MAE: 0, P90Coverage: 1},
		},
		{
			// The short C overtakes the long B when A's GPU frees up; B was
			// told 100 before C arrived and starts at 110.
			name:      "short predicted GPU-time goes first",
			tr:        traceOf(tj(0, 1, 100, 100), tj(1, 1, 1000, 1000), tj(2, 1, 10, 10)),
			nodes:     1,
			gpn:       1,
			wantWaits: []float64{0, 109, 98},
			wantPred:  &StartPrediction{Jobs: 2, Within10Min: 1, Within10Pct: 1, MAE: 5, Bias: 5, P90Coverage: 0.5}, // B starts 10 s late
		},
		{
			// A job larger than a node takes two whole nodes; the one-node job
			// goes beside the running one.
			name:      "gangs and best fit",
			tr:        traceOf(tj(0, 1, 50, 50), tj(1, 4, 20, 20), tj(2, 1, 10, 10)),
			nodes:     3,
			gpn:       2,
			wantWaits: []float64{0, 0, 0},
			wantPred:  &StartPrediction{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{Nodes: tt.nodes, GPUsPerNode: tt.gpn, Policy: PolicyGPUCal}
			s := replay(t, tt.tr, cfg)
			if diff := cmp.Diff(tt.wantWaits, waits(s)); diff != "" {
				t.Errorf("waits (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantPred, s.result().StartPrediction); diff != "" {
				t.Errorf("start prediction (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDropsJobsLargerThanTheCluster(t *testing.T) {
	tr := traceOf(tj(0, 1, 10, 0), tj(1, 5, 10, 0), tj(2, 4, 10, 0))
	for _, p := range Policies {
		t.Run(string(p), func(t *testing.T) {
			r, err := Run(context.Background(), tr, Config{Nodes: 2, GPUsPerNode: 2, Policy: p})
			if err != nil {
				t.Fatal(err)
			}
			if r.Jobs != 2 || r.Dropped != 1 {
				t.Errorf("jobs, dropped = %d, %d; want 2, 1", r.Jobs, r.Dropped)
			}
		})
	}
}

// randomTrace makes a small GPU workload: users with habits, requested
// times that overestimate, mostly one-GPU jobs and a few gangs.
func randomTrace(seed uint64, n int, withRequests bool) Trace {
	rng := rand.New(rand.NewPCG(seed, 1))
	var jobs []TraceJob
	var at time.Duration
	for range n {
		at += time.Duration(rng.ExpFloat64() * float64(10*time.Minute)).Truncate(time.Second)
		user := rng.IntN(6)
		gpus := []int{1, 1, 1, 1, 2, 4, 8, 16}[rng.IntN(8)]
		dur := time.Duration(float64(time.Minute) * (1 + rng.ExpFloat64()*float64(20*(user+1)))).Truncate(time.Second)
		j := TraceJob{Submit: at, GPUs: gpus, Duration: dur, User: "u" + strconv.Itoa(user), Group: "g" + strconv.Itoa(user%3)}
		if withRequests {
			j.Requested = (dur * time.Duration(1+rng.IntN(4))).Truncate(time.Minute) + time.Minute
		}
		jobs = append(jobs, j)
	}
	return traceOf(jobs...)
}

func TestDeterministic(t *testing.T) {
	tr := randomTrace(7, 300, true)
	for _, p := range Policies {
		for _, est := range Estimators {
			t.Run(string(p)+"/"+est, func(t *testing.T) {
				cfg := Config{Nodes: 4, GPUsPerNode: 4, Policy: p, Reservations: 3, Preemptible: 0.3, Seed: 11, Estimator: est}
				var got [2]Result
				for i := range got {
					r, err := Run(context.Background(), tr, cfg)
					if err != nil {
						t.Fatal(err)
					}
					r.Wall = 0
					got[i] = r
				}
				if diff := cmp.Diff(got[0], got[1]); diff != "" {
					t.Errorf("two replays differ (-first +second):\n%s", diff)
				}
			})
		}
	}
}

// TestEveryJobRunsItsLength checks what holds under every policy: each job
// starts after it is submitted and runs for exactly its duration (plus any
// time lost to drains), and the GPU-time adds up.
func TestEveryJobRunsItsLength(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		tr := randomTrace(seed, 200, seed != 2)
		for i, p := range Policies {
			est := Estimators[(i+int(seed))%len(Estimators)]
			t.Run(string(p)+"/"+strconv.FormatUint(seed, 10)+"/"+est, func(t *testing.T) {
				s := replay(t, tr, Config{Nodes: 4, GPUsPerNode: 4, Policy: p, Reservations: 2, Preemptible: 0.5, Seed: int64(seed), Estimator: est})
				for _, j := range s.jobs {
					switch {
					case j.dropped:
					case !j.started || j.running || j.queued:
						t.Fatalf("job %s: started %v running %v queued %v at the end", j.t.ID, j.started, j.running, j.queued)
					case j.firstStart < j.t.Submit || j.end-j.firstStart < j.t.Duration:
						t.Fatalf("job %s: submitted %v, started %v, ended %v, runs %v", j.t.ID, j.t.Submit, j.firstStart, j.end, j.t.Duration)
					}
				}
				if free := s.c.totalFree; free != 16 {
					t.Errorf("%d GPUs free at the end, want 16", free)
				}
			})
		}
	}
}

func TestReservations(t *testing.T) {
	tests := []struct {
		name        string
		tr          Trace
		preemptible float64
		wantDrains  bool
	}{
		// With exact requested times every policy keeps non-preemptible jobs
		// out of the windows, so nothing is stopped.
		{name: "exact requests", tr: exactRequests(randomTrace(5, 300, false)), preemptible: 0},
		// Preemptible jobs may run up to and into windows; they are drained
		// when a window opens, and the windows still open on time.
		{name: "preemptible jobs", tr: randomTrace(5, 300, false), preemptible: 1, wantDrains: true},
	}
	for _, tt := range tests {
		for _, p := range Policies {
			t.Run(tt.name+"/"+string(p), func(t *testing.T) {
				r, err := Run(context.Background(), tt.tr, Config{Nodes: 4, GPUsPerNode: 4, Policy: p, Reservations: 6,
					Preemptible: tt.preemptible, Seed: 3})
				if err != nil {
					t.Fatal(err)
				}
				b := r.Bookings
				if b == nil || b.Reservations == 0 {
					t.Fatalf("no bookings were made: %+v", b)
				}
				if b.Honored != 1 || b.Undisturbed != 1 || b.EvictedJobs != 0 {
					t.Errorf("%v on time, %v undisturbed, %d non-preemptible jobs evicted; want every window on time and undisturbed",
						b.Honored, b.Undisturbed, b.EvictedJobs)
				}
				if tt.wantDrains && p != PolicySJF && (b.DrainedJobs == 0 || b.DrainedGPUHours <= 0) {
					t.Errorf("drained %d jobs, %v GPU-hours; want some", b.DrainedJobs, b.DrainedGPUHours)
				}
			})
		}
	}
}

// exactRequests gives every job its true runtime as its requested time and
// drops the users, so that every policy's estimate is exact.
func exactRequests(tr Trace) Trace {
	for i := range tr.Jobs {
		tr.Jobs[i].Requested = tr.Jobs[i].Duration
		tr.Jobs[i].User, tr.Jobs[i].Group = "", ""
	}
	return tr
}

func TestBookingsNeverOverlap(t *testing.T) {
	tr := randomTrace(9, 400, true)
	s := replay(t, tr, Config{Nodes: 6, GPUsPerNode: 8, Policy: PolicyEASY, Reservations: 20, Seed: 1})
	made := 0
	for i, a := range s.bookings {
		if !a.made {
			continue
		}
		made++
		if a.start < a.booked+minLead || a.end <= a.start || len(a.nodes) != a.want {
			t.Fatalf("booking %d = %+v is malformed", i, a)
		}
		for _, b := range s.bookings[i+1:] {
			if b.made && a.start < b.end && b.start < a.end {
				for _, n := range a.nodes {
					if slices.Contains(b.nodes, n) {
						t.Fatalf("bookings %+v and %+v share node %d", a, b, n)
					}
				}
			}
		}
	}
	if made < len(s.bookings)/2 {
		t.Errorf("%d of %d bookings were made, want most", made, len(s.bookings))
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{Nodes: 0, GPUsPerNode: 8, Policy: PolicyFIFO}, "between 1 and 65536 nodes"},
		{Config{Nodes: 1, GPUsPerNode: 65, Policy: PolicyFIFO}, "between 1 and 64 GPUs"},
		{Config{Nodes: 1, GPUsPerNode: 8, Policy: "lottery"}, `unknown policy "lottery"`},
		{Config{Nodes: 1, GPUsPerNode: 8, Policy: PolicyFIFO, Reservations: -1}, "reservation rate"},
		{Config{Nodes: 1, GPUsPerNode: 8, Policy: PolicyFIFO, Preemptible: 2}, "preemptible share"},
		{Config{Nodes: 1, GPUsPerNode: 8, Policy: PolicyFIFO, Limit: -1}, "limit"},
		{Config{Nodes: 1, GPUsPerNode: 8, Policy: PolicyFIFO, Estimator: "oracle"}, `unknown estimator "oracle"`},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			_, err := Run(context.Background(), Trace{}, tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}

func TestRunStopsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Run(ctx, randomTrace(1, 10, false), Config{Nodes: 1, GPUsPerNode: 8, Policy: PolicyFIFO})
	if err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Errorf("error = %v, want the context's", err)
	}
}

func TestLimit(t *testing.T) {
	r, err := Run(context.Background(), randomTrace(1, 50, false), Config{Nodes: 2, GPUsPerNode: 8, Policy: PolicyFIFO, Limit: 20})
	if err != nil {
		t.Fatal(err)
	}
	if r.Jobs+r.Dropped != 20 {
		t.Errorf("replayed %d jobs (%d dropped), want 20", r.Jobs, r.Dropped)
	}
}
