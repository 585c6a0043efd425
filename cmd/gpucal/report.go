package main

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gpucal/gpucal/web"
)

// runReport prints the usage report for a period (DESIGN §8): GPU-hours by
// project, user and job type, booked against used, no-shows, waits and
// estimate accuracy, as text, JSON (--json) or CSV (--csv: one row per
// project, user and type).
func runReport(ctx context.Context, e *env, args []string) error {
	var cf clientFlags
	var from, to string
	var asCSV bool
	fs := newFlagSet("report", e)
	fs.StringVar(&from, "from", "-7d", "start of the period: a time, or -7d / -24h back from now")
	fs.StringVar(&to, "to", "now", "end of the period")
	fs.BoolVar(&asCSV, "csv", false, "print CSV: kind, name, GPU-hours, jobs")
	_, c, loc, err := cf.setup(e, fs, args, 0, 0)
	if err != nil {
		return err
	}
	now := time.Now()
	start, err := periodEdge(from, now, loc)
	if err != nil {
		return usagef("--from: %v", err)
	}
	end, err := periodEdge(to, now, loc)
	if err != nil {
		return usagef("--to: %v", err)
	}
	rep, err := c.Report(ctx, start, end)
	if err != nil || cf.json {
		return jsonOr(e, err, cf.json, rep)
	}
	if asCSV {
		return reportCSV(e.stdout, rep)
	}
	printReport(e.stdout, rep, loc)
	return nil
}

// periodEdge reads "-7d", "-24h" (back from now) or any time parseWhen reads.
func periodEdge(s string, now time.Time, loc *time.Location) (time.Time, error) {
	if len(s) > 1 && s[0] == '-' {
		if d, err := parseBack(s[1:]); err == nil {
			return now.Add(-d), nil
		}
	}
	return parseWhen(s, now, loc)
}

// parseBack reads "7d" or a Go duration.
func parseBack(s string) (time.Duration, error) {
	if n, err := strconv.Atoi(s[:len(s)-1]); err == nil && s[len(s)-1] == 'd' && n > 0 {
		return time.Duration(n) * 24 * time.Hour, nil
	}
	return time.ParseDuration(s)
}

func printReport(w io.Writer, r web.ReportJSON, loc *time.Location) {
	fmt.Fprintf(w, "Usage %s – %s\n\n", r.From.In(loc).Format("2006-01-02 15:04"), r.To.In(loc).Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(w, "GPUs %d, %.0f GPU-hours offered, %.0f used: %.1f %% utilisation\n", r.GPUs, r.Capacity, r.Used, 100*r.Utilisation)
	fmt.Fprintf(w, "Bookings %d: %.0f GPU-hours booked, %.0f of them used; %d no-shows\n", r.Reservations, r.Booked, r.BookedUsed, r.NoShows)
	fmt.Fprintf(w, "Jobs started %d: wait %s on average, %s at P90\n", r.Started, fmtSeconds(r.AvgWait), fmtSeconds(r.P90Wait))
	if r.Finished > 0 {
		fmt.Fprintf(w, "Estimates of %d finished jobs: accuracy %.2f (1 is perfect)\n", r.Finished, r.Accuracy)
	}
	for _, g := range []struct {
		title string
		rows  []web.UsageTotalJSON
	}{{"project", r.ByProject}, {"user", r.ByUser}, {"type", r.ByType}} {
		if len(g.rows) == 0 {
			continue
		}
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "%s\tGPU-hours\tjobs\t\n", g.title)
		for _, u := range g.rows {
			fmt.Fprintf(tw, "%s\t%.1f\t%d\t\n", u.Name, u.GPUHours, u.Jobs)
		}
		tw.Flush()
	}
}

func fmtSeconds(s float64) string {
	return (time.Duration(s) * time.Second).Round(time.Minute).String()
}

func reportCSV(w io.Writer, r web.ReportJSON) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"kind", "name", "gpu_hours", "jobs"})
	for _, g := range []struct {
		kind string
		rows []web.UsageTotalJSON
	}{{"project", r.ByProject}, {"user", r.ByUser}, {"type", r.ByType}} {
		for _, u := range g.rows {
			cw.Write([]string{g.kind, csvSafe(u.Name), strconv.FormatFloat(u.GPUHours, 'f', 2, 64), strconv.Itoa(u.Jobs)})
		}
	}
	cw.Flush()
	return cw.Error()
}

// csvSafe keeps a spreadsheet from reading a name as a formula.
func csvSafe(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
