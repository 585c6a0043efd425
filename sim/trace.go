package sim

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"time"
)

// Trace is a workload to replay: jobs in submission order, submit times
// relative to the first job's.
type Trace struct {
	Jobs []TraceJob
	// Skipped counts records the loader read but left out because they
	// cannot be replayed (no GPUs, a runtime nobody recorded).
	Skipped int
	// MaxProcs is the machine size an SWF header declares (0 when unknown).
	MaxProcs int
}

// TraceJob is one job as a trace records it. Nodes and Status are kept for
// reports; the replay places jobs by GPU count on the simulated cluster.
type TraceJob struct {
	ID        string        // the trace's own job ID
	Submit    time.Duration // since the trace's first submission
	GPUs      int           // GPUs (processors in an HPC trace)
	Nodes     int           // nodes the job ran on, when the trace says (0: unknown)
	Duration  time.Duration // true runtime
	Requested time.Duration // the user's requested time (limit); 0 when unknown
	User      string        // "" when the trace has no users
	Group     string        // group, virtual cluster or project; "" when unknown
	Status    string        // "completed", "failed", "cancelled", or the trace's own word; "" when unknown
}

// Format names a trace format.
type Format string

// The trace formats Load reads.
const (
	FormatPhilly Format = "philly" // the Philly-derived CSV of shared/traces/philly-derived-rfold
	FormatSWF    Format = "swf"    // the Standard Workload Format of the Parallel Workloads Archive
	FormatHelios Format = "helios" // the Helios / Philly job-log CSV (job_id, user, vc, gpu_num, …)
)

// Formats lists the formats Load reads.
var Formats = []Format{FormatPhilly, FormatSWF, FormatHelios}

// Load reads a plain-text trace in format f.
func Load(r io.Reader, f Format) (Trace, error) {
	switch f {
	case FormatPhilly:
		return LoadPhilly(r)
	case FormatSWF:
		return LoadSWF(r)
	case FormatHelios:
		return LoadHelios(r)
	}
	return Trace{}, fmt.Errorf("unknown trace format %q; use one of philly, swf, helios", f)
}

// maxSeconds bounds every time a trace may state (about 95 years), so that
// conversions to time.Duration (at most about 292 years) never overflow,
// even for a submission time plus a runtime.
const maxSeconds = 3e9

// seconds converts a non-negative number of seconds to a Duration, rounded
// to the millisecond.
func seconds(s float64) (time.Duration, error) {
	if math.IsNaN(s) || s < 0 || s > maxSeconds {
		return 0, fmt.Errorf("%v seconds is out of range", s)
	}
	return time.Duration(math.Round(s*1e3)) * time.Millisecond, nil
}

// lineError is a loader's error for one line of input.
func lineError(line int, format string, args ...any) error {
	return fmt.Errorf("line %d: %s", line, fmt.Sprintf(format, args...))
}

// normalise sorts jobs by submit time (stable, so ties keep file order) and
// makes submit times relative to the first one.
func (t *Trace) normalise() {
	slices.SortStableFunc(t.Jobs, func(a, b TraceJob) int { return cmp.Compare(a.Submit, b.Submit) })
	if len(t.Jobs) == 0 {
		return
	}
	first := t.Jobs[0].Submit
	for i := range t.Jobs {
		t.Jobs[i].Submit -= first
	}
}
