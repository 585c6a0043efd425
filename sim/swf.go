package sim

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// LoadSWF reads the Standard Workload Format of the Parallel Workloads
// Archive: ';' comment lines (the header), then one job per line in 18
// whitespace-separated fields, -1 meaning unknown:
//
//	1 job, 2 submit, 3 wait, 4 run, 5 allocated procs, 6 CPU, 7 memory,
//	8 requested procs, 9 requested time, 10 requested memory, 11 status,
//	12 user, 13 group, 14 executable, 15 queue, 16 partition,
//	17 preceding job, 18 think time
//
// Processors play the role of GPUs: a job's GPU count is its allocated
// processors, or its requested processors when the allocation is unknown.
// Jobs without a recorded runtime, submit time or processor count are
// skipped and counted in Trace.Skipped. The header's MaxProcs (or MaxNodes)
// becomes Trace.MaxProcs.
func LoadSWF(r io.Reader) (Trace, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	var t Trace
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		if text[0] == ';' {
			t.readSWFHeader(text[1:])
			continue
		}
		j, ok, err := swfJob(strings.Fields(text))
		if err != nil {
			return Trace{}, fmt.Errorf("swf trace: %w", lineError(line, "%v", err))
		}
		if !ok {
			t.Skipped++
			continue
		}
		t.Jobs = append(t.Jobs, j)
	}
	if err := sc.Err(); err != nil {
		return Trace{}, fmt.Errorf("swf trace: %w", lineError(line+1, "%v", err))
	}
	t.normalise()
	return t, nil
}

// readSWFHeader takes the machine size from a "MaxProcs: 100" or
// "MaxNodes: 100" header line; MaxProcs wins when both are there.
func (t *Trace) readSWFHeader(text string) {
	key, value, ok := strings.Cut(text, ":")
	if !ok {
		return
	}
	n, err := strconv.Atoi(strings.TrimSpace(value))
	if err != nil || n < 1 || n > maxJobGPUs {
		return
	}
	switch strings.TrimSpace(key) {
	case "MaxProcs":
		t.MaxProcs = n
	case "MaxNodes":
		if t.MaxProcs == 0 {
			t.MaxProcs = n
		}
	}
}

// swfJob reads one job line; ok is false for a job that cannot be replayed.
func swfJob(f []string) (j TraceJob, ok bool, err error) {
	if len(f) != 18 {
		return j, false, fmt.Errorf("a job line has 18 fields, this one has %d", len(f))
	}
	num := func(i int, name string) (float64, error) {
		v, err := strconv.ParseFloat(f[i-1], 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, fmt.Errorf("field %d (%s) %q is not a number", i, name, f[i-1])
		}
		return v, nil
	}
	var v [19]float64
	for _, fld := range swfFields {
		if v[fld.i], err = num(fld.i, fld.name); err != nil {
			return j, false, err
		}
	}
	procs := v[5]
	if procs < 1 {
		procs = v[8]
	}
	if v[2] < 0 || v[4] < 0 || procs < 1 {
		return j, false, nil
	}
	if procs > maxJobGPUs {
		return j, false, fmt.Errorf("%v processors is too many", procs)
	}
	j = TraceJob{ID: f[0], GPUs: int(procs), User: swfID("u", v[12]), Group: swfID("g", v[13]), Status: swfStatus(v[11])}
	if j.Submit, err = seconds(v[2]); err != nil {
		return j, false, fmt.Errorf("submit: %w", err)
	}
	if j.Duration, err = seconds(v[4]); err != nil {
		return j, false, fmt.Errorf("run: %w", err)
	}
	if v[9] > 0 {
		if j.Requested, err = seconds(v[9]); err != nil {
			return j, false, fmt.Errorf("requested time: %w", err)
		}
	}
	return j, true, nil
}

// swfFields are the fields the simulator reads, by their 1-based position.
var swfFields = []struct {
	i    int
	name string
}{{2, "submit"}, {4, "run"}, {5, "allocated procs"}, {8, "requested procs"},
	{9, "requested time"}, {11, "status"}, {12, "user"}, {13, "group"}}

// swfID names a user or group by its SWF number ("u12"), "" when unknown.
func swfID(prefix string, v float64) string {
	if v < 0 || v > math.MaxInt32 {
		return ""
	}
	return prefix + strconv.FormatInt(int64(v), 10)
}

func swfStatus(v float64) string {
	switch v {
	case 1:
		return "completed"
	case 0:
		return "failed"
	case 5:
		return "cancelled"
	case -1:
		return ""
	}
	return "status " + strconv.FormatFloat(v, 'f', -1, 64)
}
