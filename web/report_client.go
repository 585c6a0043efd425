package web

import (
	"context"
	"math"
	"net/http"
	"net/url"
	"time"

	"github.com/gpucal/gpucal/core"
)

// ReportJSON is a usage report (core.Report) as GET /api/v1/report
// returns it. Hours are GPU-hours, waits seconds, shares between 0 and 1.
type ReportJSON struct {
	From        time.Time `json:"from"`
	To          time.Time `json:"to"`
	GPUs        int       `json:"gpus"`
	Capacity    float64   `json:"capacity_gpu_h"`
	Used        float64   `json:"used_gpu_h"`
	Utilisation float64   `json:"utilisation"`

	ByProject []UsageTotalJSON `json:"by_project"` // most used first
	ByUser    []UsageTotalJSON `json:"by_user"`
	ByType    []UsageTotalJSON `json:"by_type"`

	Reservations int     `json:"reservations"`
	Booked       float64 `json:"booked_gpu_h"`
	BookedUsed   float64 `json:"booked_used_gpu_h"`
	NoShows      int     `json:"no_shows"`

	Started  int     `json:"started"`
	AvgWait  float64 `json:"avg_wait_s"`
	P90Wait  float64 `json:"p90_wait_s"`
	Finished int     `json:"finished"`
	Accuracy float64 `json:"accuracy"`

	// Heatmap is the share of GPUs held by jobs by weekday (7 rows,
	// Sunday first, as Go's time.Weekday) and hour (24 columns), in UTC.
	Heatmap [7][24]float64 `json:"heatmap"`
}

// UsageTotalJSON is the GPU-hours of one project, user or job type.
type UsageTotalJSON struct {
	Name     string  `json:"name"`
	GPUHours float64 `json:"gpu_h"`
	Jobs     int     `json:"jobs"`
}

// ReportToJSON converts a report to its wire form; lists are never null.
func ReportToJSON(r core.Report) ReportJSON {
	return ReportJSON{
		From: r.From.UTC(), To: r.To.UTC(), GPUs: r.GPUs, Capacity: r.Capacity, Used: r.Used, Utilisation: r.Utilisation,
		ByProject: totalsToJSON(r.ByProject), ByUser: totalsToJSON(r.ByUser), ByType: totalsToJSON(r.ByType),
		Reservations: r.Reservations, Booked: r.Booked, BookedUsed: r.BookedUsed, NoShows: r.NoShows,
		Started: r.Started, AvgWait: r.AvgWait.Seconds(), P90Wait: r.P90Wait.Seconds(),
		Finished: r.Finished, Accuracy: r.Accuracy, Heatmap: r.Heatmap,
	}
}

// ReportFromJSON converts the wire form back; waits are rounded to the
// millisecond.
func ReportFromJSON(j ReportJSON) core.Report {
	return core.Report{
		From: j.From.UTC(), To: j.To.UTC(), GPUs: j.GPUs, Capacity: j.Capacity, Used: j.Used, Utilisation: j.Utilisation,
		ByProject: totalsFromJSON(j.ByProject), ByUser: totalsFromJSON(j.ByUser), ByType: totalsFromJSON(j.ByType),
		Reservations: j.Reservations, Booked: j.Booked, BookedUsed: j.BookedUsed, NoShows: j.NoShows,
		Started: j.Started, AvgWait: fromSeconds(j.AvgWait), P90Wait: fromSeconds(j.P90Wait),
		Finished: j.Finished, Accuracy: j.Accuracy, Heatmap: j.Heatmap,
	}
}

func totalsToJSON(us []core.UsageTotal) []UsageTotalJSON {
	out := make([]UsageTotalJSON, len(us))
	for i, u := range us {
		out[i] = UsageTotalJSON{Name: u.Name, GPUHours: u.GPUHours, Jobs: u.Jobs}
	}
	return out
}

func totalsFromJSON(us []UsageTotalJSON) []core.UsageTotal {
	if len(us) == 0 {
		return nil
	}
	out := make([]core.UsageTotal, len(us))
	for i, u := range us {
		out[i] = core.UsageTotal{Name: u.Name, GPUHours: u.GPUHours, Jobs: u.Jobs}
	}
	return out
}

// fromSeconds converts seconds to a duration, to the millisecond.
func fromSeconds(s float64) time.Duration {
	return time.Duration(math.Round(s*1000)) * time.Millisecond
}

// Report returns the usage report for [from, to).
func (c *Client) Report(ctx context.Context, from, to time.Time) (ReportJSON, error) {
	v := url.Values{}
	setTime(v, "from", from)
	setTime(v, "to", to)
	var out ReportJSON
	return out, c.do(ctx, http.MethodGet, "/api/v1/report?"+v.Encode(), nil, nil, &out)
}
