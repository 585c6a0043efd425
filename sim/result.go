package sim

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Result is what one replay measured. Times are in seconds.
type Result struct {
	Policy      Policy  `json:"policy"`
	Estimator   string  `json:"estimator"` // the runtime estimator every policy learned with
	Jobs        int     `json:"jobs"`      // jobs replayed
	Dropped     int     `json:"dropped"`   // jobs larger than the cluster, left out
	GPUs        int     `json:"gpus"`      // the cluster's GPUs
	AvgJCT      float64 `json:"avg_jct_s"`
	AvgWait     float64 `json:"avg_wait_s"`
	P50Wait     float64 `json:"p50_wait_s"`
	P95Wait     float64 `json:"p95_wait_s"`
	P99Wait     float64 `json:"p99_wait_s"`
	Utilization float64 `json:"utilization"` // GPU-seconds of work ÷ (GPUs × makespan)
	Makespan    float64 `json:"makespan_s"`  // first submission to last end
	Replans     int     `json:"replans"`     // scheduling passes (for gpucal: planner calls)
	Wall        float64 `json:"wall_s"`      // real time the replay took
	// BySize is the average wait of the jobs of each GPU count, smallest
	// first: where a policy loses is rarely spread evenly over sizes.
	BySize []SizeWait `json:"by_size"`
	// StartPrediction compares the start each job was promised at
	// submission with its actual start (easy and gpucal only).
	StartPrediction *StartPrediction `json:"start_prediction,omitempty"`
	// Bookings is set when the replay had synthetic reservations.
	*Bookings
}

// SizeWait is the jobs of one GPU count and their average wait in seconds.
type SizeWait struct {
	GPUs    int     `json:"gpus"`
	Jobs    int     `json:"jobs"`
	AvgWait float64 `json:"avg_wait_s"`
}

// StartPrediction measures start-time predictions over the jobs that did
// not start at the instant they were submitted (the ones whose owners ask
// "when will it start?").
type StartPrediction struct {
	Jobs        int     `json:"jobs"`         // jobs measured
	Within10Min float64 `json:"within_10min"` // share with |P50 − actual| ≤ 10 minutes
	Within10Pct float64 `json:"within_10pct"` // share with |P50 − actual| ≤ 10 % of the actual wait
	MAE         float64 `json:"mae_s"`        // mean |P50 − actual|
	Bias        float64 `json:"bias_s"`       // mean (actual − P50): above 0, jobs start later than promised
	P90Coverage float64 `json:"p90_coverage"` // share that started no later than the P90 prediction
}

// Bookings says how the synthetic reservations fared.
type Bookings struct {
	Reservations int `json:"reservations"` // bookings made
	// Refused counts booking requests that found no free nodes for their
	// window (held by other windows or by jobs that may not be drained).
	Refused int `json:"reservations_refused"`
	// Honored is the share of windows that started on time: their GPUs
	// free when they opened, once whatever was on them had been stopped
	// (as the agent stops it).
	Honored float64 `json:"reservations_honored"`
	// Undisturbed is the share of windows that opened with no
	// non-preemptible job on their GPUs (preemptible ones are drained as
	// planned): the others cost a job that did not expect it its run.
	Undisturbed float64 `json:"reservations_undisturbed"`
	// DrainedJobs counts jobs stopped when a window opened; EvictedJobs the
	// non-preemptible ones among them (they had outrun their expected end).
	DrainedJobs int `json:"drained_jobs"`
	EvictedJobs int `json:"evicted_jobs"`
	// DrainedGPUHours is the GPU time the stopped jobs had run when they
	// were stopped: the work a drain puts at risk (the replay assumes it
	// was checkpointed and resumes the jobs with what they had left).
	DrainedGPUHours float64 `json:"drained_gpu_hours"`
}

func (s *simulation) result() Result {
	r := Result{Policy: s.cfg.Policy, Estimator: cmp.Or(s.cfg.Estimator, EstimatorRequest), GPUs: s.cfg.Nodes * s.cfg.GPUsPerNode, Replans: s.replans}
	var waits []float64
	var jct, work float64
	var last time.Duration
	sizes := map[int]*SizeWait{}
	for i := range s.jobs {
		j := &s.jobs[i]
		if j.dropped {
			r.Dropped++
			continue
		}
		wait := (j.firstStart - j.t.Submit).Seconds()
		waits = append(waits, wait)
		sw := sizes[j.t.GPUs]
		if sw == nil {
			sw = &SizeWait{GPUs: j.t.GPUs}
			sizes[j.t.GPUs] = sw
		}
		sw.Jobs++
		sw.AvgWait += wait
		jct += (j.end - j.t.Submit).Seconds()
		work += float64(j.t.GPUs) * j.t.Duration.Seconds()
		last = max(last, j.end)
	}
	r.Jobs = len(waits)
	if r.Jobs > 0 {
		r.AvgJCT = round(jct/float64(r.Jobs), 1)
		r.AvgWait = round(sum(waits)/float64(r.Jobs), 1)
		slices.Sort(waits)
		r.P50Wait, r.P95Wait, r.P99Wait = percentile(waits, 50), percentile(waits, 95), percentile(waits, 99)
	}
	for _, sw := range sizes {
		sw.AvgWait = round(sw.AvgWait/float64(sw.Jobs), 1)
		r.BySize = append(r.BySize, *sw)
	}
	slices.SortFunc(r.BySize, func(a, b SizeWait) int { return cmp.Compare(a.GPUs, b.GPUs) })
	r.Makespan = round(last.Seconds(), 1)
	if last > 0 {
		r.Utilization = round(work/(float64(r.GPUs)*last.Seconds()), 4)
	}
	if s.cfg.Policy == PolicyEASY || s.cfg.Policy == PolicyGPUCal {
		r.StartPrediction = s.startPrediction()
	}
	if s.cfg.Reservations > 0 {
		r.Bookings = s.bookingResult()
	}
	return r
}

func (s *simulation) startPrediction() *StartPrediction {
	var p StartPrediction
	var within10m, within10p, covered int
	var absErr, bias float64
	for i := range s.jobs {
		j := &s.jobs[i]
		if j.dropped || !j.predicted || j.immediate {
			continue
		}
		p.Jobs++
		err := (j.predP50 - j.firstStart).Abs()
		absErr += err.Seconds()
		bias += (j.firstStart - j.predP50).Seconds()
		if err <= 10*time.Minute {
			within10m++
		}
		if err <= (j.firstStart-j.t.Submit)/10 {
			within10p++
		}
		if j.firstStart <= j.predP90 {
			covered++
		}
	}
	if p.Jobs > 0 {
		n := float64(p.Jobs)
		p.Within10Min = round(float64(within10m)/n, 4)
		p.Within10Pct = round(float64(within10p)/n, 4)
		p.MAE = round(absErr/n, 1)
		p.Bias = round(bias/n, 1)
		p.P90Coverage = round(float64(covered)/n, 4)
	}
	return &p
}

func (s *simulation) bookingResult() *Bookings {
	b := &Bookings{Honored: 1, Undisturbed: 1, DrainedJobs: s.drained.jobs, EvictedJobs: s.drained.evicted, DrainedGPUHours: round(s.drained.gpuHours, 1)}
	onTime, undisturbed := 0, 0
	for _, bk := range s.bookings {
		if !bk.made {
			b.Refused++
			continue
		}
		if bk.onTime {
			onTime++
		}
		if bk.undisturbed {
			undisturbed++
		}
	}
	if b.Reservations = len(s.bookings) - b.Refused; b.Reservations > 0 {
		b.Honored = round(float64(onTime)/float64(b.Reservations), 4)
		b.Undisturbed = round(float64(undisturbed)/float64(b.Reservations), 4)
	}
	return b
}

// percentile returns the nearest-rank p-th percentile of sorted values.
func percentile(sorted []float64, p float64) float64 {
	k := int(math.Ceil(p / 100 * float64(len(sorted))))
	return round(sorted[min(max(k, 1), len(sorted))-1], 1)
}

func sum(xs []float64) float64 {
	t := 0.0
	for _, x := range xs {
		t += x
	}
	return t
}

func round(x float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(x*p) / p
}

// WriteTable prints results as a table, one policy per row. When the
// sjf-oracle reference is among them, the average wait and JCT are also
// shown as multiples of its.
func WriteTable(w io.Writer, rs []Result) error {
	if len(rs) == 0 {
		return nil
	}
	var ref *Result
	for i := range rs {
		if rs[i].Policy == PolicySJF {
			ref = &rs[i]
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"policy", "jobs", "avg wait s", "p50 wait", "p95 wait", "p99 wait", "avg JCT s", "util", "makespan s"}
	if ref != nil {
		head = append(head, "wait÷sjf", "JCT÷sjf")
	}
	head = append(head, "pred ±10min", "±10%", "MAE s", "P90 cover")
	if rs[0].Bookings != nil {
		head = append(head, "bookings", "on time", "undisturbed", "drained GPU-h")
	}
	head = append(head, "wall s")
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, r := range rs {
		row := []string{string(r.Policy), thousands(float64(r.Jobs)), thousands(r.AvgWait), thousands(r.P50Wait),
			thousands(r.P95Wait), thousands(r.P99Wait), thousands(r.AvgJCT), percent(r.Utilization), thousands(r.Makespan)}
		if ref != nil {
			row = append(row, ratio(r.AvgWait, ref.AvgWait), ratio(r.AvgJCT, ref.AvgJCT))
		}
		if p := r.StartPrediction; p != nil {
			row = append(row, percent(p.Within10Min), percent(p.Within10Pct), thousands(p.MAE), percent(p.P90Coverage))
		} else {
			row = append(row, "-", "-", "-", "-")
		}
		if b := r.Bookings; b != nil {
			row = append(row, thousands(float64(b.Reservations)), percent(b.Honored), percent(b.Undisturbed), thousands(b.DrainedGPUHours))
		}
		row = append(row, strconv.FormatFloat(r.Wall, 'f', 1, 64))
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	return tw.Flush()
}

// thousands formats x rounded to a whole number with thousands separators.
func thousands(x float64) string {
	s := strconv.FormatFloat(math.Round(math.Abs(x)), 'f', 0, 64)
	var b strings.Builder
	if x < 0 && s != "0" {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func percent(x float64) string { return strconv.FormatFloat(100*x, 'f', 1, 64) + "%" }

func ratio(x, ref float64) string {
	if ref == 0 {
		return "-"
	}
	return strconv.FormatFloat(x/ref, 'f', 2, 64) + "×"
}
