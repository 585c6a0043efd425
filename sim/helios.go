package sim

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// LoadHelios reads a job log in the CSV layout of the Helios traces
// (S-Lab-System-Group/HeliosData) and of Philly logs converted to it:
//
//	job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue
//
// Columns are found by their header names, in any order, and unknown ones
// are ignored, so a full Helios log loads unchanged. submit_time and gpu_num
// are required, and either duration or start_time and end_time; job_id,
// user, vc (the group), node_num and state are used when present. Times are
// Unix seconds or "YYYY-MM-DD HH:MM:SS" (the zone does not matter: only
// differences are used). Jobs without GPUs (CPU jobs) and jobs that never
// ran (no duration, no start or end) are skipped and counted.
func LoadHelios(r io.Reader) (Trace, error) {
	cr := csv.NewReader(r)
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return Trace{}, errors.New("helios trace: the file is empty; it needs a header line naming the columns")
	}
	if err != nil {
		return Trace{}, fmt.Errorf("helios trace: %w", err)
	}
	cols, err := heliosColumns(header)
	if err != nil {
		return Trace{}, fmt.Errorf("helios trace: %w", lineError(1, "%v", err))
	}
	var t Trace
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Trace{}, fmt.Errorf("helios trace: %w", err)
		}
		line, _ := cr.FieldPos(0)
		j, ok, err := cols.job(rec)
		if err != nil {
			return Trace{}, fmt.Errorf("helios trace: %w", lineError(line, "%v", err))
		}
		if !ok {
			t.Skipped++
			continue
		}
		t.Jobs = append(t.Jobs, j)
	}
	t.normalise()
	return t, nil
}

// heliosCols holds the position of each column the loader reads; -1 when absent.
type heliosCols struct {
	id, user, vc, gpus, nodes, state, submit, start, end, duration int
}

func heliosColumns(header []string) (heliosCols, error) {
	c := heliosCols{-1, -1, -1, -1, -1, -1, -1, -1, -1, -1}
	byName := map[string]*int{"job_id": &c.id, "user": &c.user, "vc": &c.vc, "gpu_num": &c.gpus, "node_num": &c.nodes,
		"state": &c.state, "submit_time": &c.submit, "start_time": &c.start, "end_time": &c.end, "duration": &c.duration}
	for i, name := range header {
		name = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(name, "\ufeff")))
		if p, ok := byName[name]; ok && *p < 0 {
			*p = i
		}
	}
	switch {
	case c.submit < 0 || c.gpus < 0:
		return c, errors.New("the header must name the columns submit_time and gpu_num (and duration, or start_time and end_time)")
	case c.duration < 0 && (c.start < 0 || c.end < 0):
		return c, errors.New("the header must name a duration column, or both start_time and end_time")
	}
	return c, nil
}

// field returns column i of rec, trimmed; "" when the column is absent.
func field(rec []string, i int) string {
	if i < 0 || i >= len(rec) {
		return ""
	}
	return strings.TrimSpace(rec[i])
}

// job reads one record; ok is false for a job that cannot be replayed.
func (c heliosCols) job(rec []string) (j TraceJob, ok bool, err error) {
	gpus, err := strconv.Atoi(field(rec, c.gpus))
	if err != nil || gpus < 0 || gpus > maxJobGPUs {
		return j, false, fmt.Errorf("gpu_num %q is not a GPU count", field(rec, c.gpus))
	}
	j = TraceJob{ID: field(rec, c.id), GPUs: gpus, User: field(rec, c.user), Group: field(rec, c.vc),
		Status: heliosState(field(rec, c.state))}
	if s := field(rec, c.nodes); s != "" {
		if j.Nodes, err = strconv.Atoi(s); err != nil || j.Nodes < 0 || j.Nodes > maxJobGPUs {
			return j, false, fmt.Errorf("node_num %q is not a node count", s)
		}
	}
	submit, err := heliosTime("submit_time", field(rec, c.submit))
	if err != nil {
		return j, false, err
	}
	if j.Submit, err = seconds(submit); err != nil {
		return j, false, fmt.Errorf("submit_time: %w", err)
	}
	ran, err := c.runtime(rec)
	if err != nil || ran < 0 {
		return j, false, err
	}
	if j.Duration, err = seconds(ran); err != nil {
		return j, false, fmt.Errorf("duration: %w", err)
	}
	return j, gpus > 0, nil
}

// runtime returns a record's runtime in seconds: the duration column when
// it is filled in, else end_time − start_time; −1 when the job never ran.
func (c heliosCols) runtime(rec []string) (float64, error) {
	if s := field(rec, c.duration); s != "" {
		d, err := strconv.ParseFloat(s, 64)
		if err != nil || d < 0 || d > maxSeconds {
			return 0, fmt.Errorf("duration %q is not a number of seconds", s)
		}
		return d, nil
	}
	startText, endText := field(rec, c.start), field(rec, c.end)
	if startText == "" || endText == "" {
		return -1, nil
	}
	start, err := heliosTime("start_time", startText)
	if err != nil {
		return 0, err
	}
	end, err := heliosTime("end_time", endText)
	if err != nil {
		return 0, err
	}
	if end < start {
		return 0, fmt.Errorf("end_time %q is before start_time %q", endText, startText)
	}
	return end - start, nil
}

// heliosTimeLayouts are the date forms the job logs use.
var heliosTimeLayouts = []string{time.DateTime, "2006-01-02T15:04:05", "2006-01-02 15:04:05.999999999"}

// heliosTime reads Unix seconds or a date as seconds since the Unix epoch.
func heliosTime(name, s string) (float64, error) {
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		if v < 0 || v > maxSeconds {
			return 0, fmt.Errorf("%s %q is out of range", name, s)
		}
		return v, nil
	}
	for _, layout := range heliosTimeLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			if t.Year() < 1970 || t.Year() > 2200 {
				return 0, fmt.Errorf("%s %q is out of range", name, s)
			}
			return float64(t.UnixNano()) / 1e9, nil
		}
	}
	return 0, fmt.Errorf("%s %q is neither Unix seconds nor a time like 2020-04-01 08:30:00", name, s)
}

// heliosState normalises a job state: Helios writes COMPLETED, FAILED,
// CANCELLED, TIMEOUT, NODE_FAIL; Philly logs write Pass, Failed, Killed.
func heliosState(s string) string {
	switch s = strings.ToLower(s); s {
	case "completed", "pass":
		return "completed"
	case "failed", "node_fail":
		return "failed"
	case "cancelled", "canceled", "killed":
		return "cancelled"
	}
	return s
}
