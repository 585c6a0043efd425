package main

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/digest"
)

// calendarJobs runs tasks at fixed times of the week. gocron is behind it,
// pinned (the library notes flag v2.21.2 as served from an earlier copy):
// this small interface is all the server uses of it.
type calendarJobs interface {
	// Weekly runs task every week on day at hour:minute in the jobs' zone.
	Weekly(name string, at weekTime, task func(context.Context)) (next time.Time, err error)
	// Daily runs task every day at hour:minute in the jobs' zone.
	Daily(name string, hour, minute int, task func(context.Context)) (next time.Time, err error)
	// Run runs the jobs until ctx ends, then waits for a task in progress.
	Run(ctx context.Context) error
}

// gocronJobs is calendarJobs on gocron.
type gocronJobs struct{ s gocron.Scheduler }

func newCalendarJobs(loc *time.Location) (*gocronJobs, error) {
	s, err := gocron.NewScheduler(gocron.WithLocation(loc))
	if err != nil {
		return nil, fmt.Errorf("starting the calendar jobs: %w", err)
	}
	return &gocronJobs{s: s}, nil
}

func (g *gocronJobs) Weekly(name string, at weekTime, task func(context.Context)) (time.Time, error) {
	j, err := g.s.NewJob(
		gocron.WeeklyJob(1, gocron.NewWeekdays(at.day), gocron.NewAtTimes(gocron.NewAtTime(uint(at.hour), uint(at.minute), 0))),
		gocron.NewTask(task), gocron.WithName(name), gocron.WithSingletonMode(gocron.LimitModeReschedule))
	if err != nil {
		return time.Time{}, fmt.Errorf("scheduling %s: %w", name, err)
	}
	g.s.Start()
	return j.NextRun()
}

func (g *gocronJobs) Daily(name string, hour, minute int, task func(context.Context)) (time.Time, error) {
	j, err := g.s.NewJob(gocron.DailyJob(1, gocron.NewAtTimes(gocron.NewAtTime(uint(hour), uint(minute), 0))),
		gocron.NewTask(task), gocron.WithName(name), gocron.WithSingletonMode(gocron.LimitModeReschedule))
	if err != nil {
		return time.Time{}, fmt.Errorf("scheduling %s: %w", name, err)
	}
	g.s.Start()
	return j.NextRun()
}

func (g *gocronJobs) Run(ctx context.Context) error {
	g.s.Start()
	<-ctx.Done()
	stop, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return g.s.ShutdownWithContext(stop)
}

// weekTime is a time of the week: "mon 09:00".
type weekTime struct {
	day          time.Weekday
	hour, minute int
}

func (w weekTime) String() string {
	return fmt.Sprintf("%s %02d:%02d", strings.ToLower(w.day.String()[:3]), w.hour, w.minute)
}

// parseWeekTime reads "mon 09:00", "Monday 9:00", "fri 17:30".
func parseWeekTime(s string) (weekTime, error) {
	bad := fmt.Errorf("%q is not a time of the week; write it like \"mon 09:00\"", s)
	day, clock, ok := strings.Cut(strings.ToLower(strings.TrimSpace(s)), " ")
	if !ok || len(day) < 3 {
		return weekTime{}, bad
	}
	wd, found := weekdays[day[:3]]
	if !found || (len(day) > 3 && !strings.HasPrefix(strings.ToLower(wd.String()), day)) {
		return weekTime{}, bad
	}
	hh, mm, ok := strings.Cut(strings.TrimSpace(clock), ":")
	h, err1 := strconv.Atoi(hh)
	m, err2 := strconv.Atoi(mm)
	if !ok || err1 != nil || err2 != nil || h < 0 || h > 23 || m < 0 || m > 59 || len(mm) != 2 || len(hh) > 2 {
		return weekTime{}, bad
	}
	return weekTime{day: wd, hour: h, minute: m}, nil
}

// filePoster posts a file with a comment to a chat channel, a mailbox or
// a group robot.
type filePoster interface {
	PostFile(ctx context.Context, channel, text, filename string, data []byte) error
}

// digestTarget is a channel the weekly digest goes to.
type digestTarget struct {
	platform, channel string
}

// parseDigestTargets reads "slack:C0123,discord:9876".
func parseDigestTargets(s string) ([]digestTarget, error) {
	var out []digestTarget
	for _, t := range commaSeparated(s) {
		p, ch, ok := strings.Cut(t, ":")
		if !ok || ch == "" || (p != "slack" && p != "discord" && p != "email" && p != "group") {
			return nil, fmt.Errorf("%q: name a target as slack:CHANNEL_ID, discord:CHANNEL_ID, email:ADDRESS or group:NAME", t)
		}
		if p == "email" {
			if err := core.CheckEmail(ch); err != nil {
				return nil, fmt.Errorf("%q: %s", t, core.ErrorMessage(err))
			}
		}
		out = append(out, digestTarget{platform: p, channel: ch})
	}
	return out, nil
}

// digestJob posts the last week's digest — summary and chart — to its
// targets. A target whose platform is off, or whose post fails, is logged
// and the others still get it.
type digestJob struct {
	svc     *core.Service
	targets []digestTarget
	posters map[string]filePoster // by platform
	lang    string
	font    string
	zone    *time.Location // the chat zone: dates, weekdays and hours
	log     *slog.Logger
}

func (d digestJob) run(ctx context.Context) {
	if err := d.post(ctx); err != nil {
		d.log.Error("posting the weekly digest", "err", err)
	}
}

func (d digestJob) post(ctx context.Context) error {
	end := d.svc.Now().Truncate(time.Hour)
	if first, err := d.svc.ClaimOnce(ctx, "digest.posted", end.Format(time.RFC3339)); err != nil || !first {
		return err // posted already for this hour: a second start of the task
	}
	rep, err := d.svc.Report(ctx, core.System, core.ReportQuery{From: end.Add(-digestPeriod), To: end})
	if err != nil {
		return err
	}
	text := digest.Summary(rep, d.lang, d.zone)
	png, err := digest.Chart(rep, digest.ChartOptions{FontPath: d.font, Lang: d.lang, Zone: d.zone})
	if err != nil {
		return err
	}
	name := "gpucal-digest-" + end.Format("2006-01-02") + ".png"
	var failed []string
	for _, t := range d.targets {
		key := t.platform
		if key == "group" {
			key = "group:" + t.channel
		}
		p, ok := d.posters[key]
		if !ok {
			failed = append(failed, t.platform+":"+t.channel+" (the app is off)")
			continue
		}
		if err := p.PostFile(ctx, t.channel, text, name, png); err != nil {
			d.log.Error("posting the weekly digest", "to", t.platform+":"+t.channel, "err", err)
			failed = append(failed, t.platform+":"+t.channel)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("the digest did not reach %s", strings.Join(failed, ", "))
	}
	return nil
}

// dailySummary writes the admins' summary of the last 24 hours to the
// outbox: the notifier delivers it like any admins' event (chat, email,
// team chats), once per day.
func dailySummary(ctx context.Context, svc *core.Service, zone *time.Location, log *slog.Logger) {
	end := svc.Now().Truncate(time.Hour)
	rep, err := svc.Report(ctx, core.System, core.ReportQuery{From: end.Add(-24 * time.Hour), To: end})
	if err == nil {
		err = svc.AnnounceSummary(ctx, end.Format("2006-01-02"), digest.Summary(rep, "en", zone), digest.Summary(rep, "zh", zone))
	}
	if err != nil {
		log.Error("the daily summary", "err", err)
	}
}

// scheduleSummary schedules the admins' daily summary at --summary-at in
// the chat zone; nil when it is off.
func scheduleSummary(c chatConfig, svc *core.Service, log *slog.Logger) (func(context.Context) error, error) {
	if c.summaryAt == "" || c.summaryAt == "off" {
		return nil, nil
	}
	at, err := time.Parse("15:04", c.summaryAt)
	if err != nil {
		return nil, usagef("--summary-at %q: a time of day like 09:00, or off", c.summaryAt)
	}
	jobs, err := newCalendarJobs(chatZone(c))
	if err != nil {
		return nil, err
	}
	if _, err := jobs.Daily("daily-summary", at.Hour(), at.Minute(), func(ctx context.Context) { dailySummary(ctx, svc, chatZone(c), log) }); err != nil {
		return nil, err
	}
	return jobs.Run, nil
}
