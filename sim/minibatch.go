package sim

import (
	"cmp"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// This file reads the mini-batch timings of one distributed training
// job of the Alibaba PAI 2020 trace, for EvaluateProgress.

// MiniBatchJob is one distributed training job as a PAI mini-batch file
// records it: for each logged iteration, the time each worker took.
//
// The job is taken to be synchronous data-parallel: an iteration ends when
// its slowest worker does, so the job's time for an iteration is the
// largest of its workers' (MiniBatchIteration.Time). A worker that did not
// log an iteration (one fewer row at the end of a file, a late start) is
// left out of that iteration's maximum; Partial counts such iterations.
type MiniBatchJob struct {
	Name       string  // what the caller calls the job (its file); LoadMiniBatch leaves it empty
	Workers    int     // distinct workers seen
	GPUPercent float64 // each worker's GPU request in percent; 0 when the file has no gpu column
	// Iterations are the logged iterations by number. The PAI files log
	// every tenth one; see EvaluateProgress for the ones in between.
	Iterations []MiniBatchIteration
	// Duplicates counts rows that repeat a worker's time for an iteration
	// exactly; they are ignored.
	Duplicates int
}

// MiniBatchIteration is one logged iteration.
type MiniBatchIteration struct {
	Number int64        // the iteration's number, from 1
	Times  []WorkerTime // the workers that logged it, by worker
}

// WorkerTime is one worker's time for one iteration, in the file's unit
// (the PAI files normalise them to 0..1000 per job).
type WorkerTime struct {
	Worker int
	Time   float64
}

// Time is the iteration's time: its slowest worker's.
func (it MiniBatchIteration) Time() float64 {
	var t float64
	for _, w := range it.Times {
		t = max(t, w.Time)
	}
	return t
}

// Partial counts the iterations that some worker did not log.
func (j MiniBatchJob) Partial() int {
	n := 0
	for _, it := range j.Iterations {
		if len(it.Times) < j.Workers {
			n++
		}
	}
	return n
}

// Sanity limits for LoadMiniBatch: far above any real job, low enough that
// a malformed file cannot exhaust memory or overflow the replay's clock.
const (
	maxMiniBatchRows      = 5_000_000
	maxMiniBatchWorkers   = 10_000
	maxMiniBatchIteration = 10_000_000
	maxMiniBatchTime      = 1e6   // one iteration, in the file's unit
	maxGPUPercent         = 6_400 // 64 GPUs per worker
	maxMiniBatchJobTime   = 1e9   // the whole job: 31 years on the replay's clock, within a time.Duration
)

// LoadMiniBatch reads a PAI mini-batch job file (job_N_norm.csv):
//
//	,worker,gpu,time,batch_time_norm
//	0,0,25,1,476
//
// Columns are found by their header names, in any order: worker, time (the
// iteration number) and batch_time_norm are required, gpu is read when
// present and must be the same on every row, others (the unnamed row
// index) are ignored. Rows may come in any order. Errors name the line.
func LoadMiniBatch(r io.Reader) (MiniBatchJob, error) {
	rows, gpu, err := readMiniBatchRows(r)
	if err != nil {
		return MiniBatchJob{}, fmt.Errorf("mini-batch file: %w", err)
	}
	if len(rows) == 0 {
		return MiniBatchJob{}, errors.New("mini-batch file: no iterations; it needs a header line and a row per worker and iteration")
	}
	job, err := groupMiniBatchRows(rows)
	if err != nil {
		return MiniBatchJob{}, fmt.Errorf("mini-batch file: %w", err)
	}
	job.GPUPercent = gpu
	if d := newTimeline(job).duration(); d > maxMiniBatchJobTime {
		return MiniBatchJob{}, fmt.Errorf("mini-batch file: the iterations add up to %g time units; at most %g can be replayed",
			d, float64(maxMiniBatchJobTime))
	}
	return job, nil
}

// miniBatchRow is one row of a mini-batch file.
type miniBatchRow struct {
	iteration int64
	worker    int
	time      float64
	line      int
}

// miniBatchCols holds the position of each column the loader reads; -1 when absent.
type miniBatchCols struct{ worker, gpu, iteration, time int }

func miniBatchColumns(header []string) (miniBatchCols, error) {
	c := miniBatchCols{-1, -1, -1, -1}
	byName := map[string]*int{"worker": &c.worker, "gpu": &c.gpu, "time": &c.iteration, "batch_time_norm": &c.time}
	for i, name := range header {
		name = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(name, "\ufeff")))
		if p, ok := byName[name]; ok && *p < 0 {
			*p = i
		}
	}
	if c.worker < 0 || c.iteration < 0 || c.time < 0 {
		return c, errors.New("the header must name the columns worker, time (the iteration) and batch_time_norm")
	}
	return c, nil
}

// readMiniBatchRows reads every row, and the gpu column's value (0 without one).
func readMiniBatchRows(r io.Reader) ([]miniBatchRow, float64, error) {
	cr := csv.NewReader(r)
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	cols, err := miniBatchColumns(header)
	if err != nil {
		return nil, 0, lineError(1, "%v", err)
	}
	var rows []miniBatchRow
	gpu, gpuLine := 0.0, 0
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return rows, gpu, nil
		}
		if err != nil {
			return nil, 0, err
		}
		line, _ := cr.FieldPos(0)
		if len(rows) == maxMiniBatchRows {
			return nil, 0, lineError(line, "more than %d rows; a job file is far smaller", maxMiniBatchRows)
		}
		row, g, err := cols.row(rec)
		if err != nil {
			return nil, 0, lineError(line, "%v", err)
		}
		switch {
		case cols.gpu < 0:
		case gpuLine == 0:
			gpu, gpuLine = g, line
		case g != gpu:
			return nil, 0, lineError(line, "gpu %v differs from the %v on line %d; a file holds one job", g, gpu, gpuLine)
		}
		row.line = line
		rows = append(rows, row)
	}
}

// row reads one record, and its gpu value when the file has the column.
func (c miniBatchCols) row(rec []string) (miniBatchRow, float64, error) {
	var r miniBatchRow
	var err error
	if r.worker, err = strconv.Atoi(field(rec, c.worker)); err != nil || r.worker < 0 || r.worker >= maxMiniBatchWorkers {
		return r, 0, fmt.Errorf("worker %q is not a worker number from 0 to %d", field(rec, c.worker), maxMiniBatchWorkers-1)
	}
	if r.iteration, err = strconv.ParseInt(field(rec, c.iteration), 10, 64); err != nil || r.iteration < 1 || r.iteration > maxMiniBatchIteration {
		return r, 0, fmt.Errorf("time %q is not an iteration number from 1 to %d", field(rec, c.iteration), maxMiniBatchIteration)
	}
	s := field(rec, c.time)
	if r.time, err = strconv.ParseFloat(s, 64); err != nil || !(r.time >= 0 && r.time <= maxMiniBatchTime) {
		return r, 0, fmt.Errorf("batch_time_norm %q is not a time from 0 to %g", s, float64(maxMiniBatchTime))
	}
	if c.gpu < 0 {
		return r, 0, nil
	}
	s = field(rec, c.gpu)
	g, err := strconv.ParseFloat(s, 64)
	if err != nil || !(g > 0 && g <= maxGPUPercent) {
		return r, 0, fmt.Errorf("gpu %q is not a GPU request in percent, above 0 and at most %d", s, maxGPUPercent)
	}
	return r, g, nil
}

// groupMiniBatchRows sorts rows into iterations by number, each with its
// workers in order. A row that repeats a worker's time for an iteration is
// counted and dropped; one that contradicts it is an error.
func groupMiniBatchRows(rows []miniBatchRow) (MiniBatchJob, error) {
	slices.SortStableFunc(rows, func(a, b miniBatchRow) int {
		return cmp.Or(cmp.Compare(a.iteration, b.iteration), cmp.Compare(a.worker, b.worker))
	})
	var job MiniBatchJob
	workers := map[int]bool{}
	for i, r := range rows {
		if i > 0 && rows[i-1].iteration == r.iteration && rows[i-1].worker == r.worker {
			prev := rows[i-1]
			if prev.time != r.time {
				return MiniBatchJob{}, lineError(r.line, "worker %d's time for iteration %d is %v, but line %d says %v",
					r.worker, r.iteration, r.time, prev.line, prev.time)
			}
			job.Duplicates++
			continue
		}
		if n := len(job.Iterations); n == 0 || job.Iterations[n-1].Number != r.iteration {
			job.Iterations = append(job.Iterations, MiniBatchIteration{Number: r.iteration})
		}
		it := &job.Iterations[len(job.Iterations)-1]
		it.Times = append(it.Times, WorkerTime{Worker: r.worker, Time: r.time})
		workers[r.worker] = true
	}
	job.Workers = len(workers)
	return job, nil
}
