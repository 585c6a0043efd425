package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/gpucal/gpucal/web"
)

func runCalendar(ctx context.Context, e *env, args []string) error {
	var cf clientFlags
	var from, user, project, model string
	var days int
	fs := newFlagSet("calendar", e)
	cf.register(fs)
	fs.StringVar(&from, "from", "today", "first day or instant: today, tomorrow, 2026-12-03, \"today 12:00\"")
	fs.IntVar(&days, "days", 1, "how many days to show (1 to 31)")
	fs.StringVar(&user, "user", "", "only this user's reservations")
	fs.StringVar(&project, "project", "", "only this project's reservations")
	fs.StringVar(&model, "model", "", "only GPUs of this model: a100, h100-80gb, …")
	if _, err := parseArgs(fs, args, 0, 0); err != nil {
		return err
	}
	if days < 1 || days > 31 {
		return usagef("--days must be between 1 and 31")
	}
	c, loc, err := cf.client(e)
	if err != nil {
		return err
	}
	now := time.Now()
	start, err := parseWhen(from, now, loc)
	if err != nil {
		return usageError{err.Error()}
	}
	end := start.AddDate(0, 0, days)
	cal, err := c.Calendar(ctx, web.CalendarQuery{From: start, To: end, User: user, Project: project, Model: model})
	if err != nil || cf.json {
		return jsonOr(e, err, cf.json, cal)
	}
	renderCalendar(e.stdout, cal, start, end, now, loc)
	return nil
}

// calendarSteps are the cell sizes renderCalendar chooses from.
var calendarSteps = []time.Duration{15 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour}

// maxCells is the widest timeline renderCalendar draws, so that a row fits a
// wide terminal next to its label.
const maxCells = 96

// renderCalendar draws one row per GPU over [start, end): a cell per step,
// '.' where the GPU is free, an upper-case letter where a reservation or a
// running job holds it, a lower-case letter where a queued job is planned,
// '~' where a job may still run (between its median and 90th-percentile
// end), a legend for the letters, and a marker at now.
func renderCalendar(w io.Writer, cal web.Calendar, start, end, now time.Time, loc *time.Location) {
	step := calendarSteps[len(calendarSteps)-1]
	for _, s := range calendarSteps {
		if end.Sub(start)/s <= maxCells {
			step = s
			break
		}
	}
	cells := int((end.Sub(start) + step - 1) / step)
	labelWidth := len("GPU")
	for _, g := range cal.GPUs {
		labelWidth = max(labelWidth, len(gpuLabel(g)))
	}
	pad := strings.Repeat(" ", labelWidth+3)

	// Header: the day at each midnight, then an hour tick every few cells.
	dayLine, hourLine := []rune(strings.Repeat(" ", cells+12)), []rune(strings.Repeat(" ", cells+6))
	for i := range cells {
		t := start.Add(time.Duration(i) * step).In(loc)
		if i == 0 || (t.Hour() == 0 && t.Minute() == 0) {
			copy(dayLine[i:], []rune(t.Format("Mon 2 Jan")))
		}
		if t.Minute() == 0 && (t.Hour()%max(1, int(6*step/time.Hour)) == 0) && i+2 <= len(hourLine) {
			copy(hourLine[i:], []rune(fmt.Sprintf("%02d", t.Hour())))
		}
	}
	fmt.Fprintf(w, "%s%s\n%s%s\n", pad, strings.TrimRight(string(dayLine), " "), pad, strings.TrimRight(string(hourLine), " "))

	letters := map[string]rune{}
	legend := []web.CalendarItem{}
	held, planned := 0, 0
	for _, it := range cal.Items {
		if _, ok := letters[it.ID]; ok {
			continue
		}
		if it.Planned {
			letters[it.ID] = plannedLetter(planned)
			planned++
		} else {
			letters[it.ID] = itemLetter(held)
			held++
		}
		legend = append(legend, it)
	}
	byGPU := map[int64][]web.CalendarItem{}
	for _, it := range cal.Items {
		for _, id := range it.GPUs {
			byGPU[id] = append(byGPU[id], it)
		}
	}
	prevNode := ""
	for _, g := range cal.GPUs {
		if prevNode != "" && g.Node != prevNode {
			fmt.Fprintln(w)
		}
		prevNode = g.Node
		row := []rune(strings.Repeat(".", cells))
		for i := range cells {
			cs, ce := start.Add(time.Duration(i)*step), start.Add(time.Duration(i+1)*step)
			best := time.Duration(0)
			for _, it := range byGPU[g.ID] {
				if ov := overlap(cs, ce, it.Start, it.End); ov > best {
					best, row[i] = ov, letters[it.ID]
				}
			}
			for _, it := range byGPU[g.ID] {
				if row[i] == '.' && it.Kind == "job" && overlap(cs, ce, it.End, it.EndP90) > 0 {
					row[i] = '~'
				}
			}
		}
		fmt.Fprintf(w, "%-*s   %s\n", labelWidth, gpuLabel(g), string(row))
	}
	if !now.Before(start) && now.Before(end) {
		fmt.Fprintf(w, "%s%s^ now %s\n", pad, strings.Repeat(" ", int(now.Sub(start)/step)), now.In(loc).Format("15:04"))
	}
	fmt.Fprintf(w, "\nOne cell = %s, times in %s. '.' = free.", fmtLength(step), start.In(loc).Format("MST"))
	if planned > 0 {
		fmt.Fprint(w, " Lower case = queued jobs where the planner puts them.")
	}
	if slices.ContainsFunc(cal.Items, func(it web.CalendarItem) bool { return it.EndP90.After(it.End) }) {
		fmt.Fprint(w, " '~' = a job may still be running (until its 90th-percentile end).")
	}
	fmt.Fprintln(w)
	for _, it := range legend {
		line := fmt.Sprintf("  %c  %-5s %-10s %-10s %s  %d GPU(s)", letters[it.ID], it.ID, it.Owner, dash(it.Project), fmtSpan(it.Start, it.End, loc), len(it.GPUs))
		if b := jobBand(it, loc); it.Kind == "job" && b != "" {
			line += " " + b
		}
		if it.State != "confirmed" && it.State != "active" {
			line += " [" + it.State + "]"
		}
		if it.Note != "" {
			line += "  " + truncate(it.Note, 40)
		}
		fmt.Fprintln(w, line)
	}
	if len(legend) == 0 {
		fmt.Fprintln(w, "  Nothing booked in this range.")
	}
}

func gpuLabel(g web.GPU) string { return fmt.Sprintf("%s/%d %s", g.Node, g.Index, g.Model) }

// itemLetter names the i-th reservation or running job of a legend: A–Z,
// 0–9, then '#'.
func itemLetter(i int) rune {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	if i < len(alphabet) {
		return rune(alphabet[i])
	}
	return '#'
}

// plannedLetter names the i-th queued job of a legend: a–z, then '+'.
func plannedLetter(i int) rune {
	const alphabet = "abcdefghijklmnopqrstuvwxyz"
	if i < len(alphabet) {
		return rune(alphabet[i])
	}
	return '+'
}

// jobBand says how sure a job's times are: "(90%: start by 10:30, end by 14:00)".
func jobBand(it web.CalendarItem, loc *time.Location) string {
	var parts []string
	if it.Planned && it.StartP90.After(it.Start) {
		parts = append(parts, "start by "+it.StartP90.In(loc).Format("Mon 15:04"))
	}
	if it.EndP90.After(it.End) {
		parts = append(parts, "end by "+it.EndP90.In(loc).Format("Mon 15:04"))
	}
	if len(parts) == 0 {
		return ""
	}
	return "(90%: " + strings.Join(parts, ", ") + ")"
}

func overlap(s1, e1, s2, e2 time.Time) time.Duration {
	s, e := s1, e1
	if s2.After(s) {
		s = s2
	}
	if e2.Before(e) {
		e = e2
	}
	if !e.After(s) {
		return 0
	}
	return e.Sub(s)
}
