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

// LoadPhilly reads the Philly-derived CSV of shared/traces/philly-derived-rfold:
//
//	#job id,arrival time (sec),topology,shape,size,duration (sec)
//	0,0.0,CLOS,1,1,3613033.0
//	7,120.5,CLOS,8+8,16,5400.0
//
// Lines starting with '#' are comments. The shape is the job's per-node split
// as recorded ("8+8" is two nodes of 8); it must add up to the size. The
// trace has no users and no requested times.
func LoadPhilly(r io.Reader) (Trace, error) {
	cr := csv.NewReader(r)
	cr.Comment = '#'
	cr.FieldsPerRecord = 6
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true
	var t Trace
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Trace{}, fmt.Errorf("philly trace: %w", err)
		}
		line, _ := cr.FieldPos(0)
		j, err := phillyJob(rec)
		if err != nil {
			return Trace{}, fmt.Errorf("philly trace: %w", lineError(line, "%v", err))
		}
		t.Jobs = append(t.Jobs, j)
	}
	t.normalise()
	return t, nil
}

func phillyJob(rec []string) (TraceJob, error) {
	id := strings.TrimSpace(rec[0])
	if id == "" {
		return TraceJob{}, errors.New("the job id is empty")
	}
	arrival, err := secondsField("arrival time", rec[1])
	if err != nil {
		return TraceJob{}, err
	}
	size, err := strconv.Atoi(strings.TrimSpace(rec[4]))
	if err != nil || size < 1 || size > maxJobGPUs {
		return TraceJob{}, fmt.Errorf("size %q is not a GPU count between 1 and %d", rec[4], maxJobGPUs)
	}
	nodes, sum := 0, 0
	for part := range strings.SplitSeq(strings.TrimSpace(rec[3]), "+") {
		n, err := strconv.Atoi(part)
		if err != nil || n < 1 || n > maxJobGPUs {
			return TraceJob{}, fmt.Errorf("shape %q is not a per-node split like 8+8", rec[3])
		}
		nodes++
		sum += n
		if sum > maxJobGPUs {
			return TraceJob{}, fmt.Errorf("shape %q is too large", rec[3])
		}
	}
	if sum != size {
		return TraceJob{}, fmt.Errorf("shape %q adds up to %d GPUs but the size is %d", rec[3], sum, size)
	}
	duration, err := secondsField("duration", rec[5])
	if err != nil {
		return TraceJob{}, err
	}
	return TraceJob{ID: id, Submit: arrival, GPUs: size, Nodes: nodes, Duration: duration}, nil
}

// maxJobGPUs bounds a job's GPU (or processor) count.
const maxJobGPUs = 1 << 20

// secondsField parses a field holding a non-negative number of seconds.
func secondsField(name, s string) (d time.Duration, err error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, fmt.Errorf("%s %q is not a number of seconds", name, s)
	}
	d, err = seconds(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return d, nil
}
