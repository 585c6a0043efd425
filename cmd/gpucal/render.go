package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/web"
)

// fmtWhen formats an instant for people: "Thu 3 Dec 09:00 CET".
func fmtWhen(t time.Time, loc *time.Location) string {
	return t.In(loc).Format("Mon 2 Jan 15:04 MST")
}

// fmtSpan formats a window, leaving out the second date when it is the same day.
func fmtSpan(start, end time.Time, loc *time.Location) string {
	s, e := start.In(loc), end.In(loc)
	if s.YearDay() == e.YearDay() && s.Year() == e.Year() {
		return s.Format("Mon 2 Jan 15:04") + "–" + e.Format("15:04 MST")
	}
	return s.Format("Mon 2 Jan 15:04") + " – " + e.Format("Mon 2 Jan 15:04 MST")
}

// fmtLength formats a duration as people say it: 4h, 1h30m, 2d.
func fmtLength(d time.Duration) string {
	switch {
	case d >= 24*time.Hour && d%(24*time.Hour) == 0:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d > time.Hour:
		return fmt.Sprintf("%dh%02dm", d/time.Hour, (d%time.Hour)/time.Minute)
	}
	return fmt.Sprintf("%dm", d/time.Minute)
}

// gpuList compresses GPUs to "a100-1/0-3 a100-2/0,5".
func gpuList(gpus []web.GPU) string {
	byNode := map[string][]int{}
	var nodes []string
	for _, g := range gpus {
		if _, ok := byNode[g.Node]; !ok {
			nodes = append(nodes, g.Node)
		}
		byNode[g.Node] = append(byNode[g.Node], g.Index)
	}
	parts := make([]string, 0, len(nodes))
	for _, n := range nodes {
		parts = append(parts, n+"/"+indexRanges(byNode[n]))
	}
	return strings.Join(parts, " ")
}

// indexRanges writes sorted indexes as "0-3,5".
func indexRanges(idx []int) string {
	sort.Ints(idx)
	var parts []string
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && idx[j+1] == idx[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", idx[i], idx[j]))
		} else {
			parts = append(parts, fmt.Sprint(idx[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

func modelOf(gpus []web.GPU) string {
	if len(gpus) == 0 {
		return ""
	}
	m := gpus[0].Model
	for _, g := range gpus[1:] {
		if g.Model != m {
			return "mixed"
		}
	}
	return m
}

// describeReservation is the one-line summary used after a change.
func describeReservation(r web.Reservation, loc *time.Location) string {
	s := fmt.Sprintf("%d×%s on %s, %s (%s) for %s", len(r.GPUs), modelOf(r.GPUs), gpuList(r.GPUs),
		fmtSpan(r.Start, r.End, loc), fmtLength(r.End.Sub(r.Start)), r.Owner)
	if r.Project != "" {
		s += " (" + r.Project + ")"
	}
	if r.Note != "" {
		s += " — " + r.Note
	}
	return s
}

func printReservation(w io.Writer, r web.Reservation, loc *time.Location) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "Reservation\t%s\n", r.ID)
	fmt.Fprintf(tw, "State\t%s\n", r.State)
	fmt.Fprintf(tw, "Owner\t%s\n", r.Owner)
	if r.Project != "" {
		fmt.Fprintf(tw, "Project\t%s\n", r.Project)
	}
	fmt.Fprintf(tw, "Window\t%s (%s)\n", fmtSpan(r.Start, r.End, loc), fmtLength(r.End.Sub(r.Start)))
	fmt.Fprintf(tw, "GPUs\t%d×%s on %s\n", len(r.GPUs), modelOf(r.GPUs), gpuList(r.GPUs))
	for _, g := range r.GPUs {
		fmt.Fprintf(tw, "\t  %s/%d  %s\n", g.Node, g.Index, g.UUID)
	}
	if r.Note != "" {
		fmt.Fprintf(tw, "Note\t%s\n", r.Note)
	}
	fmt.Fprintf(tw, "Booked\t%s\n", fmtWhen(r.CreatedAt, loc))
	tw.Flush()
}

func printReservations(w io.Writer, rs []web.Reservation, loc *time.Location) {
	if len(rs) == 0 {
		fmt.Fprintln(w, "No reservations.")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tOWNER\tPROJECT\tSTATE\tWINDOW\tLENGTH\tGPUS\tNOTE")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d×%s %s\t%s\n", r.ID, r.Owner, dash(r.Project), r.State,
			fmtSpan(r.Start, r.End, loc), fmtLength(r.End.Sub(r.Start)), len(r.GPUs), modelOf(r.GPUs), gpuList(r.GPUs), truncate(r.Note, 40))
	}
	tw.Flush()
}

func printNodes(w io.Writer, nodes []web.Node, now time.Time, loc *time.Location) {
	if len(nodes) == 0 {
		fmt.Fprintln(w, "No nodes yet. Join one: gpucal node join-token, then on the node gpucal agent --server URL --join-token TOKEN")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tSTATE\tGPU\tMODEL\tMEMORY\tSTATUS\tUTIL\tUSED\tTEMP\tNOW\tNEXT")
	idle, total := 0, 0
	var notes []string
	for _, n := range nodes {
		state := n.State
		switch {
		case state == "":
			state = "no agent"
		case state != "ready" && !n.LastSeen.IsZero():
			notes = append(notes, fmt.Sprintf("%s is %s: last heartbeat %s ago.", n.Name, n.State, roundDuration(now.Sub(n.LastSeen))))
		}
		if n.NVML != "" {
			notes = append(notes, fmt.Sprintf("%s cannot read its GPUs: %s", n.Name, n.NVML))
		}
		for _, g := range n.GPUs {
			total++
			if g.Status == "idle" {
				idle++
			}
			util, used, temp := "-", "-", "-"
			if t := g.Telemetry; t != nil {
				util, used, temp = fmt.Sprintf("%.0f%%", t.Util), fmtMemory(t.UsedMiB), fmt.Sprintf("%.0f°C", t.TempC)
			}
			if g.Fault != "" {
				notes = append(notes, fmt.Sprintf("%s/%d is out of service: %s.", n.Name, g.Index, g.Fault))
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n.Name, state, g.Index, g.Model, fmtMemory(g.Memory), g.Status,
				util, used, temp, nowText(g, loc), refText(g.Next, loc, false))
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "\n%d node(s), %d GPU(s), %d idle now.\n", len(nodes), total, idle)
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
}

// roundDuration shortens a duration for people: 42s, 3m10s, 2h5m.
func roundDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < time.Hour:
		return d.Round(10 * time.Second).String()
	}
	return strings.TrimSuffix(d.Round(time.Minute).String(), "0s")
}

// nowText says what holds a GPU now: a job (and the reservation it runs in), or a reservation.
func nowText(g web.GPU, loc *time.Location) string {
	if g.Job == nil {
		return refText(g.Reservation, loc, true)
	}
	s := fmt.Sprintf("%s %s since %s", g.Job.ID, g.Job.Owner, g.Job.Since.In(loc).Format("Mon 15:04"))
	if g.Reservation != nil {
		s += " in " + g.Reservation.ID
	}
	return s
}

func refText(r *core.ReservationRef, loc *time.Location, now bool) string {
	if r == nil {
		return "-"
	}
	if now {
		return fmt.Sprintf("%s %s until %s", r.ID, r.Owner, r.End.In(loc).Format("Mon 15:04"))
	}
	return fmt.Sprintf("%s %s from %s", r.ID, r.Owner, r.Start.In(loc).Format("Mon 15:04"))
}

func fmtMemory(mib int64) string {
	if mib <= 0 {
		return "-"
	}
	return fmt.Sprintf("%d GiB", (mib+512)/1024)
}

func printUsers(w io.Writer, us []web.User, loc *time.Location) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "USER\tADMIN\tSINCE")
	for _, u := range us {
		fmt.Fprintf(tw, "%s\t%t\t%s\n", u.Name, u.Admin, u.CreatedAt.In(loc).Format("2006-01-02"))
	}
	tw.Flush()
}

func printProjects(w io.Writer, ps []web.Project) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROJECT\tMEMBERS")
	for _, p := range ps {
		var ms []string
		for _, m := range p.Members {
			if m.Role == "admin" {
				ms = append(ms, m.User+" (admin)")
			} else {
				ms = append(ms, m.User)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\n", p.Name, dash(strings.Join(ms, ", ")))
	}
	tw.Flush()
}

func printAudit(w io.Writer, es []web.AuditEntry, loc *time.Location) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WHEN\tACTOR\tACTION\tOBJECT\tDETAIL")
	for _, e := range es {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.At.In(loc).Format("2006-01-02 15:04:05"), e.Actor, e.Action, e.Object, e.Detail)
	}
	tw.Flush()
}

// printConflict explains a refused booking and prints each alternative as
// a command that books it.
func printConflict(e *env, apiErr *web.APIError, req web.BookRequest, loc *time.Location) {
	fmt.Fprintf(e.stderr, "gpucal: %s\n", apiErr.Message)
	if len(apiErr.With) > 0 {
		fmt.Fprintln(e.stderr, "\nIn the way:")
		for _, r := range apiErr.With {
			fmt.Fprintf(e.stderr, "  %-6s %-10s %s\n", r.ID, r.Owner, fmtSpan(r.Start, r.End, loc))
		}
	}
	if len(apiErr.Alternatives) == 0 {
		return
	}
	fmt.Fprintln(e.stderr, "\nYou could book instead:")
	for _, a := range apiErr.Alternatives {
		why := map[string]string{"later": "the earliest window of the same size", "fewer": "fewer GPUs, same window", "model": "another model, same window"}[a.Kind]
		cmd := fmt.Sprintf("gpucal book %d", a.GPUs)
		if a.Model != "" {
			cmd += " " + a.Model
		}
		cmd += fmt.Sprintf(" --from %q --to %q", a.Start.In(loc).Format("2006-01-02 15:04"), a.End.In(loc).Format("2006-01-02 15:04"))
		if req.Node != "" {
			cmd += " --node " + req.Node
		}
		if req.SameNode {
			cmd += " --same-node"
		}
		fmt.Fprintf(e.stderr, "  %s\n      %s, %s\n", cmd, why, fmtSpan(a.Start, a.End, loc))
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
