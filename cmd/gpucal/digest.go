package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/digest"
	"github.com/gpucal/gpucal/store"
	"github.com/gpucal/gpucal/web"
)

// digestPeriod is the digest's default period, up to now.
const digestPeriod = 7 * 24 * time.Hour

// runDigest prints the weekly digest's text and, with --preview, writes
// its chart as a PNG: from a server's usage report, or with --demo from a
// throwaway database seeded like `gpucal demo` (no server needed).
func runDigest(ctx context.Context, e *env, args []string) error {
	var cf clientFlags
	var preview, from, to, lang, fontPath string
	var demo bool
	fs := newFlagSet("digest", e)
	cf.register(fs)
	fs.StringVar(&preview, "preview", "", "write the chart to this PNG file")
	fs.StringVar(&from, "from", "", "start of the period: -7d, -24h (back from now), \"2026-11-26\", \"monday\", RFC 3339 … (default: 7 days before --to)")
	fs.StringVar(&to, "to", "", "end of the period, or \"+7d\" after --from (default: the start of this hour)")
	fs.StringVar(&lang, "lang", "en", "language of the text and chart: en or zh")
	fs.StringVar(&fontPath, "font", "", "a TTF/OTF font with CJK glyphs for Chinese names and --lang zh in the chart")
	fs.BoolVar(&demo, "demo", false, "use a throwaway database seeded like `gpucal demo` instead of a server")
	if _, err := parseArgs(fs, args, 0, 0); err != nil {
		return err
	}
	if lang != "en" && lang != "zh" {
		return usagef("--lang is en or zh, not %q", lang)
	}
	loc, err := cf.location(e)
	if err != nil {
		return err
	}
	now := time.Now()
	start, end, err := digestWindow(from, to, now, loc)
	if err != nil {
		return err
	}
	var r core.Report
	if demo {
		r, err = demoReport(ctx, start, end, now)
	} else {
		r, err = serverReport(ctx, e, &cf, start, end)
	}
	if err != nil {
		return err
	}
	if preview != "" {
		png, err := digest.Chart(r, digest.ChartOptions{FontPath: fontPath, Lang: lang, Zone: loc})
		if err != nil {
			return err
		}
		if err := os.WriteFile(preview, png, 0o644); err != nil {
			return fmt.Errorf("writing the chart: %w", err)
		}
	}
	if cf.json {
		return printJSON(e.stdout, web.ReportToJSON(r))
	}
	fmt.Fprint(e.stdout, digest.Summary(r, lang, loc))
	if preview != "" {
		fmt.Fprintf(e.stdout, "\nChart (%d×%d) written to %s\n", digest.Width, digest.Height, preview)
	}
	return nil
}

// digestWindow reads --from and --to: by default the 7 days up to now.
func digestWindow(from, to string, now time.Time, loc *time.Location) (time.Time, time.Time, error) {
	var start, end time.Time
	var err error
	if from != "" {
		if start, err = periodEdge(from, now, loc); err != nil {
			return start, end, usageError{err.Error()}
		}
	}
	switch {
	case to != "" && from != "":
		end, err = parseEnd(to, start, now, loc)
	case to != "":
		end, err = periodEdge(to, now, loc)
	case from != "":
		end = start.Add(digestPeriod)
		if end.After(now) {
			end = now
		}
	default:
		end = now.Truncate(time.Hour) // whole hours, as the heatmap counts them
	}
	if err != nil {
		return start, end, usageError{err.Error()}
	}
	if from == "" {
		start = end.Add(-digestPeriod)
	}
	if !end.After(start) {
		return start, end, usagef("the period must end after it starts")
	}
	return start.UTC(), end.UTC(), nil
}

func serverReport(ctx context.Context, e *env, cf *clientFlags, from, to time.Time) (core.Report, error) {
	c, _, err := cf.client(e)
	if err != nil {
		return core.Report{}, err
	}
	r, err := c.Report(ctx, from, to)
	if err != nil {
		return core.Report{}, err
	}
	return web.ReportFromJSON(r), nil
}

// demoReport seeds a temporary SQLite database as the demo does (people,
// nodes added by hand, bookings and the past week) and reports on it.
func demoReport(ctx context.Context, from, to, now time.Time) (core.Report, error) {
	dir, err := os.MkdirTemp("", "gpucal-digest-")
	if err != nil {
		return core.Report{}, err
	}
	defer os.RemoveAll(dir)
	db, err := store.Open(ctx, "sqlite:"+filepath.Join(dir, "gpucal.db"), nil)
	if err != nil {
		return core.Report{}, err
	}
	defer db.Close()
	if _, err := seedPeople(ctx, db, now); err != nil {
		return core.Report{}, err
	}
	if err := seedNodes(ctx, db, now); err != nil {
		return core.Report{}, err
	}
	if err := seedBookingsAndHistory(ctx, db, now); err != nil {
		return core.Report{}, err
	}
	svc := core.NewService(db, core.WithClock(func() time.Time { return now }))
	return svc.Report(ctx, core.System, core.ReportQuery{From: from, To: to})
}
