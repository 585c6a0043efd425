package run

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gpucal/gpucal/agent/progress"
)

// orphan starts sh -c script in a process group of its own, as an earlier
// agent would have, without a run.Process, and returns it with its log. The
// test is its parent, so its first process stays a zombie until cleanup.
func orphan(t *testing.T, script string) (Orphan, string) {
	t.Helper()
	return startOrphan(t, script, &syscall.SysProcAttr{Setpgid: true}, func() {}, func() {})
}

// startOrphan starts sh -c script with attr, its output in a fresh log.
// When the test ends, before runs, then the group is killed and reaped,
// then after runs.
func startOrphan(t *testing.T, script string, attr *syscall.SysProcAttr, before, after func()) (Orphan, string) {
	t.Helper()
	log := filepath.Join(t.TempDir(), "job.log")
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command("sh", "-c", script)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		before()
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		after()
	})
	st, err := ReadStat(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return Orphan{PID: cmd.Process.Pid, StartTicks: st.StartTicks, LogPath: log}, log
}

func TestAdoptAndStop(t *testing.T) {
	o, log := orphan(t, `trap "" TERM USR1; sleep 60 & echo ready; wait`)
	awaitLog(t, log, "ready")
	p, err := Adopt(o)
	if err != nil {
		t.Fatalf("Adopt: %v", err)
	}
	if p.PID() != o.PID || p.StartTicks() != o.StartTicks {
		t.Errorf("adopted PID %d ticks %d, want %d and %d", p.PID(), p.StartTicks(), o.PID, o.StartTicks)
	}
	select {
	case <-p.Done():
		t.Fatal("Done closed while the job runs")
	default:
	}
	now := time.Now()
	plan := StopPlan{TermAt: now, KillAt: now.Add(300 * time.Millisecond), Deadline: now.Add(5 * time.Second)}
	rep := p.Stop(context.Background(), plan)
	checkLadder(t, plan, rep)
	if got := sentSignals(rep); !sameSignals(got, []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL}) {
		t.Errorf("sent %v, want TERM then KILL", got)
	}
	if liveInGroup(o.PID) {
		t.Error("a live process is left in the adopted group")
	}
	r := p.Wait()
	if r.ExitCode != -1 || r.Signal != 0 || !r.Started.IsZero() || r.Ended.IsZero() {
		t.Errorf("result %+v; want exit -1, no signal, no start, an end", r)
	}
}

func TestAdoptGone(t *testing.T) {
	o, log := orphan(t, `echo ready; sleep 60`)
	awaitLog(t, log, "ready")
	wrong := o
	wrong.StartTicks++
	if _, err := Adopt(wrong); !errors.Is(err, ErrGone) {
		t.Errorf("Adopt with another start time: %v, want ErrGone (the PID was reused)", err)
	}
	_ = syscall.Kill(-o.PID, syscall.SIGKILL)
	for deadline := time.Now().Add(10 * time.Second); liveInGroup(o.PID) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := Adopt(o); !errors.Is(err, ErrGone) {
		t.Errorf("Adopt of a killed job: %v, want ErrGone", err)
	}
}

// TestAdoptLeaderGone: the first process has ended but a child lives on;
// the adopted Process is done at once and Stop takes the child down.
func TestAdoptLeaderGone(t *testing.T) {
	o, log := orphan(t, `(trap "" TERM; echo ready; exec sleep 60) & sleep 0.2; exit 0`)
	awaitLog(t, log, "ready")
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if st, err := ReadStat(o.PID); err != nil || !st.Live() {
			break
		}
	}
	p, err := Adopt(o)
	if err != nil {
		t.Fatalf("Adopt: %v", err)
	}
	select {
	case <-p.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed though the first process has ended")
	}
	now := time.Now()
	rep := p.Stop(context.Background(), StopPlan{TermAt: now, KillAt: now.Add(200 * time.Millisecond)})
	if rep.Gone.IsZero() || liveInGroup(o.PID) {
		t.Errorf("the child outlived Stop: %+v", rep)
	}
}

func TestAdoptFollowsProgress(t *testing.T) {
	o, log := orphan(t, `echo ready; sleep 0.5; printf ' 50%%|#####     | 5/10 [00:01<00:01,  5.00it/s]\n'`)
	awaitLog(t, log, "ready")
	var (
		mu  sync.Mutex
		got []progress.Report
	)
	o.OnProgress = func(r progress.Report) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, r)
	}
	p, err := Adopt(o)
	if err != nil {
		t.Fatalf("Adopt: %v", err)
	}
	p.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(got) == 0 || got[len(got)-1].Step != 5 || got[len(got)-1].Total != 10 {
		t.Errorf("reports %+v, want the last at 5/10", got)
	}
}

func TestParseStat(t *testing.T) {
	line := "4242 (my (odd) prog) S 1 4240 4240 0 -1 4194560 100 0 0 0 250 50 30 20 20 0 3 0 987654 12345678 300 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
	s, err := parseStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	want := Stat{PID: 4242, State: 'S', PGID: 4240, CPU: 350 * clockTick, StartTicks: 987654, RSS: 300 * int64(os.Getpagesize())}
	if s != want {
		t.Errorf("parseStat = %+v, want %+v", s, want)
	}
	for _, bad := range []string{"", "4242", "4242 (x) S 1", "x (sh) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22"} {
		if _, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("parseStat(%q) succeeded", bad)
		}
	}
	me, err := ReadStat(os.Getpid())
	if err != nil || me.PID != os.Getpid() || !me.Live() || me.StartTicks == 0 {
		t.Errorf("ReadStat(self) = %+v, %v", me, err)
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("1 (init) S 0 1 1 0 -1 4194560 100 0 0 0 250 50 30 20 20 0 3 0 987654 12345678 300 0"))
	f.Add([]byte("2 ()) Z 0 1 1 0 -1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := parseStat(b)
		if err == nil && (s.CPU < 0 || s.RSS < 0) {
			t.Errorf("parseStat(%q) = %+v: negative use", b, s)
		}
	})
}
