package core_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gpucal/gpucal/core"
)

func TestLadder(t *testing.T) {
	timing := core.DrainTiming{Grace: 2 * time.Minute, Term: 30 * time.Second, Kill: 5 * time.Second}
	deadline := epoch.Add(time.Hour)
	o := timing.Ladder(7, core.StopDrain, deadline, epoch)
	if !o.CheckpointAt.Equal(deadline.Add(-2*time.Minute)) || !o.TermAt.Equal(deadline.Add(-30*time.Second)) ||
		!o.KillAt.Equal(deadline.Add(-5*time.Second)) || !o.Deadline.Equal(deadline) || o.Job != 7 || o.Reason != core.StopDrain {
		t.Errorf("ladder an hour ahead: %+v", o)
	}
	// Decided 10 s before the deadline: what is due is due now, nothing later than the deadline.
	late := timing.Ladder(7, core.StopCancelled, deadline, deadline.Add(-10*time.Second))
	if !late.CheckpointAt.Equal(deadline.Add(-10*time.Second)) || !late.TermAt.Equal(late.CheckpointAt) || !late.KillAt.Equal(deadline.Add(-5*time.Second)) {
		t.Errorf("ladder 10 s ahead: %+v", late)
	}
	// Past the deadline: everything at once.
	past := timing.Ladder(7, core.StopDrain, deadline, deadline.Add(time.Minute))
	if !past.CheckpointAt.Equal(deadline) || !past.KillAt.Equal(deadline) {
		t.Errorf("ladder past its deadline: %+v", past)
	}
	for _, bad := range []core.DrainTiming{{Grace: time.Second, Term: 2 * time.Second}, {Term: time.Second, Kill: 2 * time.Second, Grace: 3 * time.Second}, {Kill: -1}} {
		if bad.Check() == nil {
			t.Errorf("%+v passed its check", bad)
		}
	}
	if core.DefaultDrainTiming.Check() != nil || core.DefaultNodePolicy.Check() != nil {
		t.Error("the defaults do not pass their checks")
	}
}

func TestCheckpointSignal(t *testing.T) {
	for in, want := range map[string]string{"": "SIGUSR1", "usr2": "SIGUSR2", "SIGTERM": "SIGTERM", "sigint": "SIGINT", "HUP": "SIGHUP"} {
		if got, err := core.CheckpointSignal(in); err != nil || got != want {
			t.Errorf("CheckpointSignal(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"KILL", "SIGKILL", "9", "SIGSTOP", "usr3", "SIG"} {
		if _, err := core.CheckpointSignal(bad); core.ErrorCode(err) != core.CodeInvalid {
			t.Errorf("CheckpointSignal(%q): %v, want invalid", bad, err)
		}
	}
}

func FuzzCheckpointSignal(f *testing.F) {
	for _, s := range []string{"", "usr1", "SIGUSR2", "sigterm", "KILL", "SIG", "ſigusr1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := core.CheckpointSignal(s)
		if err != nil {
			return
		}
		if !strings.HasPrefix(got, "SIG") || got == "SIGKILL" || got == "SIGSTOP" {
			t.Fatalf("CheckpointSignal(%q) = %q", s, got)
		}
		if again, err := core.CheckpointSignal(got); err != nil || again != got {
			t.Fatalf("not stable: %q → %q → %q, %v", s, got, again, err)
		}
	})
}

// FuzzHeartbeat decodes arbitrary JSON as a heartbeat and checks it: no
// panic, and a heartbeat that passes lists no GPU or job twice.
func FuzzHeartbeat(f *testing.F) {
	f.Add(`{"node":"n1","gpus":[{"index":0,"uuid":"GPU-a"}],"jobs":[{"job":1,"state":"running"}]}`)
	f.Add(`{"node":"n1","gpus":[{"index":0,"uuid":"GPU-a"},{"index":0,"uuid":"GPU-b"}]}`)
	f.Add(`{"node":"n1","jobs":[{"job":2,"state":"exited","progress":{"step":3,"total":2}}]}`)
	f.Add(`{"node":"n2"}`)
	f.Fuzz(func(t *testing.T, body string) {
		var hb core.Heartbeat
		if json.Unmarshal([]byte(body), &hb) != nil {
			return
		}
		if err := hb.Check("n1"); err != nil {
			if core.ErrorCode(err) != core.CodeInvalid && core.ErrorCode(err) != core.CodeForbidden {
				t.Fatalf("Check: %v, want invalid or forbidden", err)
			}
			return
		}
		uuids, jobs := map[string]bool{}, map[int64]bool{}
		for _, g := range hb.GPUs {
			if uuids[g.UUID] || g.UUID == "" {
				t.Fatalf("passed with GPU %q twice or empty", g.UUID)
			}
			uuids[g.UUID] = true
		}
		for _, j := range hb.Jobs {
			if jobs[j.Job] || j.Job <= 0 {
				t.Fatalf("passed with job %d twice or invalid", j.Job)
			}
			jobs[j.Job] = true
		}
	})
}

func TestNodeHealthRule(t *testing.T) {
	p := core.DefaultNodePolicy // 5 s, 3 missed, down after 5 min
	seen := epoch
	for _, c := range []struct {
		since time.Time
		after time.Duration
		want  core.NodeState
	}{
		{epoch.Add(-time.Hour), 15 * time.Second, core.NodeReady}, // the second's rounding is not silence
		{epoch.Add(-time.Hour), 16 * time.Second, core.NodeSuspect},
		{epoch.Add(-time.Hour), 5*time.Minute + time.Second, core.NodeDown},
		{epoch.Add(5 * time.Minute), 5*time.Minute + time.Second, core.NodeReady}, // the server just started
		{epoch.Add(5 * time.Minute), 10*time.Minute + time.Second, core.NodeDown},
	} {
		if got := p.Health(seen, c.since, seen.Add(c.after)); got != c.want {
			t.Errorf("heard %s ago, server up since %s: %s, want %s", c.after, c.since, got, c.want)
		}
	}
}
