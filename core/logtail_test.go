package core_test

import (
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/core/coretest"
)

// TestFailureNoticeCarriesLogTail: a failed job's notice waits until the
// agent has shipped the rest of its log (or LogWait has passed) and then
// carries its last lines, cleaned; a job that succeeded gets none.
func TestFailureNoticeCarriesLogTail(t *testing.T) {
	a := newAgentEnv(t)
	if err := a.Service.SetEmail(ctx, a.Actor(t, "alice"), "alice", "alice@example.org"); err != nil {
		t.Fatal(err)
	}
	email := []string{core.ChannelEmail}
	fanOut := func() int {
		t.Helper()
		n, err := a.Service.FanOut(ctx, email, nil)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	claim := func() []core.Delivery {
		t.Helper()
		ds, err := a.Service.ClaimDeliveries(ctx, email, time.Minute, 10)
		if err != nil {
			t.Fatal(err)
		}
		return ds
	}
	j := submit(t, a.Env, "alice", coretest.Job(1, "h100").Name("train").Build())
	replan(t, a.Env)
	a.beat(t, core.JobReport{Job: j.ID, State: core.RunRunning, PID: 7})
	fanOut()
	for _, d := range claim() { // "started" and the like: not what this test is about
		if err := a.Service.DeliverySent(ctx, d, "x"); err != nil {
			t.Fatal(err)
		}
	}
	log := "epoch 1\n 10%|█         | 1/10\r 20%|██        | 2/10\r\n" +
		"Traceback (most recent call last):\n\x1b[31mtorch.OutOfMemoryError: CUDA out of memory\x1b[0m\n"
	if _, err := a.Service.AppendLog(ctx, "n1", j.ID, 0, []byte(log)); err != nil {
		t.Fatal(err)
	}
	// The exit is reported before the log's end has arrived.
	a.beat(t, core.JobReport{Job: j.ID, State: core.RunExited, ExitCode: 1})
	if got := job(t, a.Env, j.ID); got.State != core.JobFailed {
		t.Fatalf("job %s, want failed", got.State)
	}
	if n := fanOut(); n != 0 {
		t.Fatalf("the failure was told (%d deliveries) before the log was in", n)
	}
	a.Clock.Advance(2 * time.Second)
	a.beat(t, core.JobReport{Job: j.ID, State: core.RunExited, ExitCode: 1, LogDone: true, LogSize: int64(len(log))})
	if n := fanOut(); n != 1 {
		t.Fatalf("%d deliveries once the log is in, want 1", n)
	}
	ds := claim()
	if len(ds) != 1 {
		t.Fatalf("claimed %d", len(ds))
	}
	want := "epoch 1\n 20%|██        | 2/10\nTraceback (most recent call last):\ntorch.OutOfMemoryError: CUDA out of memory"
	if got := ds[0].Event.Data[core.DataLogTail]; got != want {
		t.Errorf("log tail\n%q\nwant\n%q", got, want)
	}

	// A job whose agent never says its log is complete is told after LogWait, with what is there.
	k := submit(t, a.Env, "alice", coretest.Job(1, "h100").Build())
	replan(t, a.Env)
	a.beat(t, core.JobReport{Job: k.ID, State: core.RunRunning, PID: 8})
	a.beat(t, core.JobReport{Job: k.ID, State: core.RunExited, ExitCode: 2})
	fanOut()
	for _, d := range claim() {
		if d.Event.Kind == core.EventFinished {
			t.Fatalf("told at once: %+v", d.Event)
		}
		a.Service.DeliverySent(ctx, d, "x")
	}
	a.Clock.Advance(core.LogWait)
	if n := fanOut(); n != 1 {
		t.Fatalf("%d deliveries after LogWait, want 1", n)
	}
	if ds := claim(); len(ds) != 1 || ds[0].Event.Data[core.DataLogTail] != "" || ds[0].Event.Data[core.DataState] != "failed" {
		t.Errorf("after LogWait: %+v", ds)
	}
}

// FuzzCleanTail: whatever a job prints, the tail is at most the lines
// asked for, valid UTF-8, and free of control characters.
func FuzzCleanTail(f *testing.F) {
	f.Add([]byte("a\r\nb\x1b[1;31mred\x1b[0m\n\tc\n"), 3)
	f.Add([]byte("\x1b]8;;http://x\x07link\x1b]8;;\x07\n\xff\xfe"), 1)
	f.Add([]byte(strings.Repeat("长", 500)), 2)
	f.Fuzz(func(t *testing.T, data []byte, n int) {
		n = n%20 + 1
		if n < 1 {
			n += 20
		}
		out := core.CleanTail(data, n)
		if !utf8.ValidString(out) {
			t.Fatalf("not UTF-8: %q", out)
		}
		lines := strings.Split(out, "\n")
		if out != "" && len(lines) > n {
			t.Fatalf("%d lines, asked for %d", len(lines), n)
		}
		for _, l := range lines {
			if utf8.RuneCountInString(l) > 160 {
				t.Fatalf("a line of %d characters", utf8.RuneCountInString(l))
			}
			for _, r := range l {
				if unicode.IsControl(r) {
					t.Fatalf("control character %U in %q", r, l)
				}
			}
		}
	})
}
