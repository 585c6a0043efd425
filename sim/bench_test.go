package sim

import (
	"context"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// phillyLike generates n jobs shaped like the Philly-derived trace: mostly
// one GPU, a few gangs up to 64 GPUs, log-normal runtimes with a median of
// about 20 minutes and a long tail, Poisson arrivals every gap on average.
func phillyLike(seed uint64, n int, gap time.Duration) Trace {
	rng := rand.New(rand.NewPCG(seed, 2017))
	sizes := []struct {
		gpus   int
		weight float64
	}{{1, 0.866}, {2, 0.023}, {4, 0.049}, {8, 0.051}, {16, 0.008}, {32, 0.002}, {64, 0.001}}
	jobs := make([]TraceJob, n)
	var at time.Duration
	for i := range jobs {
		at += time.Duration(rng.ExpFloat64() * float64(gap)).Truncate(time.Second)
		u, gpus := rng.Float64(), 1
		for _, s := range sizes {
			if u -= s.weight; u <= 0 {
				gpus = s.gpus
				break
			}
		}
		dur := time.Duration(math.Exp(math.Log(1300)+2.2*rng.NormFloat64())) * time.Second
		jobs[i] = TraceJob{ID: strconv.Itoa(i), Submit: at, GPUs: gpus, Duration: min(dur, 30*24*time.Hour)}
	}
	return Trace{Jobs: jobs}
}

// BenchmarkSimPhilly replays 5,000 Philly-like jobs on 32 nodes × 8 GPUs
// under each policy; jobs/s is the replay speed.
func BenchmarkSimPhilly(b *testing.B) {
	tr := phillyLike(1, 5000, 150*time.Second)
	for _, p := range Policies {
		b.Run(string(p), func(b *testing.B) {
			cfg := Config{Nodes: 32, GPUsPerNode: 8, Policy: p, Seed: 1}
			for b.Loop() {
				if _, err := Run(context.Background(), tr, cfg); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(tr.Jobs))*float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}
