package run

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testCgroupParent makes a cgroup v2 directory for one test's jobs and
// removes it when the test ends, or skips the test where the machine has
// no cgroup v2 hierarchy this process may write.
func testCgroupParent(t *testing.T) string {
	t.Helper()
	var errs []string
	for _, mount := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		if !IsCgroup(mount) {
			continue
		}
		dir, err := os.MkdirTemp(mount, "gpucal-test-")
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		t.Cleanup(func() {
			_ = os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
			if err := removeCgroup(dir); err != nil {
				t.Errorf("removing the test's cgroup: %v", err)
			}
		})
		return dir
	}
	t.Skipf("no writable cgroup v2 hierarchy at /sys/fs/cgroup or /sys/fs/cgroup/unified (%s); the cgroup paths are untested here", strings.Join(errs, "; "))
	return ""
}

// cgroupJob is a Spec whose job gets the cgroup parent/name. The cgroup
// is killed and removed when the test ends, if the job left it.
func cgroupJob(t *testing.T, parent, name string) Spec {
	t.Helper()
	dir := filepath.Join(parent, name)
	t.Cleanup(func() {
		_ = os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
		_ = removeCgroup(dir)
	})
	return Spec{Cgroup: dir}
}

// escapee is a script fragment that starts a process that leaves the
// job's process group (setsid), ignores SIGTERM and writes its PID to
// pidfile, and sleeps on.
func escapee(pidfile string) string {
	return `setsid sh -c 'trap "" TERM; echo $$ > ` + pidfile + `.tmp; mv ` + pidfile + `.tmp ` + pidfile + `; exec sleep 1000' &`
}

// awaitCgroup is a script fragment that waits until the shell is in the
// cgroup named name. Without clone3 the job is moved there a moment after
// it started, and what it forks before that stays outside (see the
// package documentation): a test that forks an escapee waits for the move.
func awaitCgroup(name string) string {
	return `until grep -q '/` + name + `$' /proc/$$/cgroup; do sleep 0.01; done; `
}

// awaitPID waits for the PID the escapee writes to pidfile.
func awaitPID(t *testing.T, pidfile string) int {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile(pidfile)
		if err != nil || !strings.HasSuffix(string(b), "\n") {
			continue // not there, or made but not written yet (echo's redirection)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatalf("pid file %q: %v", b, err)
		}
		if st, err := ReadStat(pid); err == nil { // should the test fail to kill it
			t.Cleanup(func() {
				if now, err := ReadStat(pid); err == nil && now.StartTicks == st.StartTicks {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			})
		}
		return pid
	}
	t.Fatal("the escaped process never wrote its PID")
	return 0
}

// alive reports whether pid is a process that is more than a zombie.
func alive(pid int) bool {
	st, err := ReadStat(pid)
	return err == nil && st.Live()
}

// checkEscaped checks that pid left process group pgid and is in cgroup
// dir: the process the test means Stop to reach through the cgroup only.
func checkEscaped(t *testing.T, pid, pgid int, dir string) {
	t.Helper()
	st, err := ReadStat(pid)
	if err != nil {
		t.Fatal(err)
	}
	if st.PGID == pgid {
		t.Fatalf("process %d is still in the job's process group %d", pid, pgid)
	}
	pids, err := cgroupPIDs(dir)
	if err != nil || !slices.Contains(pids, pid) {
		t.Fatalf("process %d is not in the job's cgroup %s (%v, %v)", pid, dir, pids, err)
	}
}

// checkCgroupGone checks that no process of the job is alive and its
// cgroup is removed.
func checkCgroupGone(t *testing.T, dir string, pids ...int) {
	t.Helper()
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("process %d of the job is alive after Stop", pid)
		}
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		left, _ := cgroupPIDs(dir)
		t.Errorf("the job's cgroup is still there (%v), holding %v", err, left)
	}
}

// kernelPaths runs f once per way a kernel may offer cgroups: clone3 and
// cgroup.kill (Linux 5.14 on), and the fallbacks of older kernels.
func kernelPaths(t *testing.T, f func(t *testing.T)) {
	tests := []struct {
		name        string
		clone, kill bool
	}{
		{"clone3 and cgroup.kill", true, true},
		{"cgroup.procs and kill per process", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cloneIntoCgroup, useCgroupKill = tt.clone, tt.kill
			t.Cleanup(func() { cloneIntoCgroup, useCgroupKill = true, true })
			f(t)
		})
	}
}

// TestStopKillsEscapedProcess: a process that left the job's process
// group with setsid and ignores SIGTERM is killed at KillAt through the
// job's cgroup; Stop returns once it is dead and removes the cgroup.
func TestStopKillsEscapedProcess(t *testing.T) {
	parent := testCgroupParent(t)
	kernelPaths(t, func(t *testing.T) {
		pidfile := filepath.Join(t.TempDir(), "escaped")
		spec := cgroupJob(t, parent, "j1")
		p, log := start(t, spec, awaitCgroup("j1")+escapee(pidfile)+` echo ready; wait`)
		if p.Cgroup() != spec.Cgroup || p.CgroupErr() != nil {
			t.Fatalf("cgroup %q (%v), want %q", p.Cgroup(), p.CgroupErr(), spec.Cgroup)
		}
		awaitLog(t, log, "ready")
		escaped := awaitPID(t, pidfile)
		checkEscaped(t, escaped, p.PID(), spec.Cgroup)

		now := time.Now()
		plan := StopPlan{TermAt: now, KillAt: now.Add(300 * time.Millisecond), Deadline: now.Add(5 * time.Second)}
		rep := p.Stop(context.Background(), plan)
		checkLadder(t, plan, rep)
		if got := sentSignals(rep); !sameSignals(got, []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL}) {
			t.Errorf("sent %v, want TERM then KILL: the escaped process ignores TERM", got)
		}
		if rep.CgroupErr != nil {
			t.Errorf("CgroupErr: %v", rep.CgroupErr)
		}
		checkCgroupGone(t, spec.Cgroup, p.PID(), escaped)
		if r := p.Wait(); r.Signal != syscall.SIGTERM {
			t.Errorf("the first process ended with %+v, want killed by SIGTERM", r)
		}
	})
}

// TestStopLeftoversInCgroup: the first process exits by itself and leaves
// an escaped process behind; the leftovers ladder (TERM now, KILL soon)
// reaches it through the cgroup.
func TestStopLeftoversInCgroup(t *testing.T) {
	parent := testCgroupParent(t)
	kernelPaths(t, func(t *testing.T) {
		pidfile := filepath.Join(t.TempDir(), "escaped")
		spec := cgroupJob(t, parent, "j2")
		p, _ := start(t, spec, awaitCgroup("j2")+escapee(pidfile)+` while [ ! -s `+pidfile+` ]; do sleep 0.01; done; exit 0`)
		escaped := awaitPID(t, pidfile)
		if r := p.Wait(); r.ExitCode != 0 {
			t.Fatalf("the first process ended with %+v, want exit 0", r)
		}
		if !alive(escaped) {
			t.Fatal("the escaped process died with the first one")
		}
		now := time.Now()
		plan := StopPlan{TermAt: now, KillAt: now.Add(300 * time.Millisecond)}
		rep := p.Stop(context.Background(), plan)
		checkLadder(t, plan, rep)
		if got := sentSignals(rep); !sameSignals(got, []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL}) {
			t.Errorf("sent %v, want TERM (to the cgroup) then KILL", got)
		}
		checkCgroupGone(t, spec.Cgroup, escaped)
	})
}

// TestStopTermReachesEscaped: SIGTERM reaches a process outside the
// job's group through its cgroup, and each process gets it once (members
// of the group get it with the group); the checkpoint signal stays with
// the group.
func TestStopTermReachesEscaped(t *testing.T) {
	parent := testCgroupParent(t)
	dir := t.TempDir()
	spec := cgroupJob(t, parent, "j3")
	sigs, pidfile := filepath.Join(dir, "signals"), filepath.Join(dir, "escaped")
	// Each shell writes down the signals it takes; the escapee leaves at
	// its TERM, and would die of a USR1 without a word.
	p, log := start(t, spec, `trap "echo leader USR1 >> `+sigs+`" USR1
trap "echo leader TERM >> `+sigs+`" TERM
setsid sh -c 'trap "echo escaped TERM >> `+sigs+`; exit 0" TERM; echo $$ > `+pidfile+`; while :; do sleep 0.02; done' &
echo ready; while :; do sleep 0.02; done`)
	awaitLog(t, log, "ready")
	escaped := awaitPID(t, pidfile)
	now := time.Now()
	plan := StopPlan{CheckpointAt: now, TermAt: now.Add(200 * time.Millisecond), KillAt: now.Add(600 * time.Millisecond)}
	rep := p.Stop(context.Background(), plan)
	checkLadder(t, plan, rep)
	lines := strings.Split(strings.TrimSpace(readLog(t, sigs)), "\n")
	slices.Sort(lines)
	if want := []string{"escaped TERM", "leader TERM", "leader USR1"}; !slices.Equal(lines, want) {
		t.Errorf("signals taken %q, want %q", lines, want)
	}
	checkCgroupGone(t, spec.Cgroup, p.PID(), escaped)
}

// TestCgroupUsageCountsUnwaitedChild: the job's CPU time includes that of
// a process nobody waited for (reparented at once), which the first
// process's rusage never sees.
func TestCgroupUsageCountsUnwaitedChild(t *testing.T) {
	parent := testCgroupParent(t)
	done := filepath.Join(t.TempDir(), "done")
	spec := cgroupJob(t, parent, "j4")
	// The burner spins in shell builtins until it has used 0.3 s of CPU
	// (its own /proc stat, fields 14 and 15, in ticks), then says so.
	burn := `sh -c 'while :; do read -r l < /proc/$$/stat; set -- $l; [ $((${14}+${15})) -ge 30 ] && break; done; : > "$0"' ` + done
	p, log := start(t, spec, `( `+burn+` & ); while [ ! -e `+done+` ]; do sleep 0.02; done`)
	r := p.Wait()
	if r.ExitCode != 0 {
		t.Fatalf("the job ended with %+v:\n%s", r, readLog(t, log))
	}
	if cpu := r.UserTime + r.SystemTime; cpu < 300*time.Millisecond {
		t.Errorf("Result CPU time %v, want at least the 300ms the un-waited child burned", cpu)
	}
	rep := p.Stop(context.Background(), StopPlan{TermAt: time.Now()})
	if rep.Gone.IsZero() {
		t.Fatalf("the job was never seen gone: %+v", rep)
	}
	u, ok := p.Usage()
	if !ok || u.CPU() < r.UserTime+r.SystemTime {
		t.Errorf("Usage after the cgroup was removed = %+v, %v; want the last reading, at least the Result's", u, ok)
	}
	t.Logf("result: user %v, system %v, max rss %d; cgroup at the end: %+v", r.UserTime, r.SystemTime, r.MaxRSS, u)
}

// TestCgroupUnavailable: a cgroup that cannot be made (its parent is a
// plain directory) leaves the job in its process group, and says why.
func TestCgroupUnavailable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "j5")
	p, log := start(t, Spec{Cgroup: dir}, `echo ran`)
	if r := p.Wait(); r.ExitCode != 0 {
		t.Fatalf("the job ended with %+v", r)
	}
	awaitLog(t, log, "ran")
	if p.Cgroup() != "" || p.CgroupErr() == nil || !strings.Contains(p.CgroupErr().Error(), "not a cgroup v2 directory") {
		t.Errorf("Cgroup() = %q, CgroupErr() = %v; want none, and why", p.Cgroup(), p.CgroupErr())
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Start made %s in a plain directory (%v)", dir, err)
	}
	if _, ok := p.Usage(); ok {
		t.Error("Usage reports a cgroup the job does not have")
	}
	if rep := p.Stop(context.Background(), StopPlan{TermAt: time.Now()}); rep.Gone.IsZero() || rep.CgroupErr != nil {
		t.Errorf("Stop: %+v", rep)
	}
}

// orphanIn is orphan with the job started inside cgroup dir, as an
// earlier agent would have.
func orphanIn(t *testing.T, script, dir string) (Orphan, string) {
	t.Helper()
	cg, err := makeCgroup(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer cg.Close()
	o, log := startOrphan(t, script, &syscall.SysProcAttr{Setpgid: true, UseCgroupFD: true, CgroupFD: int(cg.Fd())},
		func() { _ = os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0) },
		func() { _ = removeCgroup(dir) })
	o.Cgroup = dir
	return o, log
}

// TestAdoptKillsThroughCgroup: an agent restarted after its job's first
// process ended adopts the job by its cgroup, where an escaped process
// lives on, and Stop kills it there.
func TestAdoptKillsThroughCgroup(t *testing.T) {
	parent := testCgroupParent(t)
	tests := []struct {
		name   string
		script string // after the escapee is started
		ticks  uint64 // added to the recorded start time: another means the PID was reused
	}{
		{"first process running", `echo ready; wait`, 0},
		{"first process ended", `while [ ! -s PIDFILE ]; do sleep 0.01; done; echo ready; exit 0`, 0},
		{"PID reused", `echo ready; wait`, 1},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pidfile := filepath.Join(t.TempDir(), "escaped")
			dir := filepath.Join(parent, "j"+strconv.Itoa(10+i))
			o, log := orphanIn(t, escapee(pidfile)+` `+strings.ReplaceAll(tt.script, "PIDFILE", pidfile), dir)
			awaitLog(t, log, "ready")
			escaped := awaitPID(t, pidfile)
			checkEscaped(t, escaped, o.PID, dir)
			o.StartTicks += tt.ticks
			p, err := Adopt(o)
			if err != nil {
				t.Fatalf("Adopt: %v", err)
			}
			if p.Cgroup() != dir {
				t.Errorf("adopted cgroup %q, want %q", p.Cgroup(), dir)
			}
			now := time.Now()
			plan := StopPlan{TermAt: now, KillAt: now.Add(200 * time.Millisecond), Deadline: now.Add(5 * time.Second)}
			rep := p.Stop(context.Background(), plan)
			checkLadder(t, plan, rep)
			if got := sentSignals(rep); len(got) == 0 || got[len(got)-1] != syscall.SIGKILL {
				t.Errorf("sent %v, want the KILL last: the escaped process ignores TERM", got)
			}
			checkCgroupGone(t, dir, escaped)
			if r := p.Wait(); r.ExitCode != -1 || !r.Started.IsZero() {
				t.Errorf("result %+v, want an adopted job's", r)
			}
		})
	}
}

// TestAdoptGoneRemovesCgroup: a job whose processes all ended while no
// agent ran is ErrGone, and its empty cgroup is removed.
func TestAdoptGoneRemovesCgroup(t *testing.T) {
	parent := testCgroupParent(t)
	dir := filepath.Join(parent, "j20")
	o, log := orphanIn(t, `echo ready; sleep 60`, dir)
	awaitLog(t, log, "ready")
	if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0); err != nil {
		t.Skipf("no cgroup.kill (Linux 5.14): %v", err)
	}
	for deadline := time.Now().Add(10 * time.Second); !cgroupEmpty(dir) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := Adopt(o); !errors.Is(err, ErrGone) {
		t.Fatalf("Adopt of a killed job: %v, want ErrGone", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the gone job's cgroup is left (%v)", err)
	}
}

func TestParseCgroupFiles(t *testing.T) {
	stat := parseKeyed([]byte("usage_usec 1500\nuser_usec 1000\nsystem_usec 500\nnr_periods 0\nbad line here\n\n"))
	if stat["usage_usec"] != 1500 || stat["user_usec"] != 1000 || stat["system_usec"] != 500 || len(stat) != 4 {
		t.Errorf("cpu.stat read as %v", stat)
	}
	if ev := parseKeyed([]byte("populated 0\nfrozen 0\n")); ev["populated"] != 0 || len(ev) != 2 {
		t.Errorf("cgroup.events read as %v", ev)
	}
	pids, err := parsePIDs([]byte("12\n345\n"))
	if err != nil || !slices.Equal(pids, []int{12, 345}) {
		t.Errorf("parsePIDs = %v, %v", pids, err)
	}
	if _, err := parsePIDs([]byte("12\nx\n")); err == nil {
		t.Error("parsePIDs took a line that is no PID")
	}
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"0::/\n", "/", true},
		{"0::/system.slice/gpucal-agent.service/agent\n", "/system.slice/gpucal-agent.service/agent", true},
		{"12:pids:/\n1:name=systemd:/x\n0::/gpucal/j42\n", "/gpucal/j42", true},
		{"4:memory:/x\n", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		got, err := ParseProcCgroup([]byte(tt.in))
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("ParseProcCgroup(%q) = %q, %v; want %q (ok %v)", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func FuzzParseCgroupFiles(f *testing.F) {
	f.Add([]byte("usage_usec 1500\nuser_usec 1000\n"))
	f.Add([]byte("12\n345\n"))
	f.Add([]byte("0::/gpucal/j42\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		parseKeyed(b)
		if pids, err := parsePIDs(b); err == nil && slices.ContainsFunc(pids, func(p int) bool { return p <= 0 }) {
			t.Errorf("parsePIDs(%q) = %v", b, pids)
		}
		if p, err := ParseProcCgroup(b); err == nil && !strings.HasPrefix(p, "/") {
			t.Errorf("ParseProcCgroup(%q) = %q", b, p)
		}
	})
}
