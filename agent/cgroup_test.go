package agent

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpucal/gpucal/agent/run"
	"github.com/gpucal/gpucal/core"
)

// testCgroupRoot makes a cgroup v2 directory to be one test's
// Config.CgroupRoot, and kills and removes what is left in it when the
// test ends; or skips the test where the machine has no cgroup v2
// hierarchy this process may write.
func testCgroupRoot(t *testing.T) string {
	t.Helper()
	var errs []string
	for _, mount := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		if !run.IsCgroup(mount) {
			continue
		}
		dir, err := os.MkdirTemp(mount, "gpucal-test-")
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		t.Cleanup(func() { removeCgroupTree(t, dir) })
		return dir
	}
	t.Skipf("no writable cgroup v2 hierarchy at /sys/fs/cgroup or /sys/fs/cgroup/unified (%s); the cgroup paths are untested here", strings.Join(errs, "; "))
	return ""
}

// removeCgroupTree kills every process in the cgroup dir and below and
// removes the cgroups, deepest first.
func removeCgroupTree(t *testing.T, dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			removeCgroupTree(t, filepath.Join(dir, e.Name()))
		}
	}
	_ = os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		err := syscall.Rmdir(dir)
		if err == nil || errors.Is(err, syscall.ENOENT) {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("removing the test's cgroup %s: %v", dir, err)
			return
		}
	}
}

// escapee starts a process that leaves the job's process group (setsid),
// ignores SIGTERM, writes its PID to pidfile and sleeps on.
func escapee(pidfile string) string {
	return `setsid sh -c 'trap "" TERM; echo $$ > ` + pidfile + `.tmp; mv ` + pidfile + `.tmp ` + pidfile + `; exec sleep 1000' & `
}

// awaitPID waits for the PID an escapee writes to pidfile.
func awaitPID(t *testing.T, pidfile string) int {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(pidfile); err == nil {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatalf("pid file %q: %v", b, err)
			}
			if st, err := run.ReadStat(pid); err == nil { // should the test fail to kill it
				t.Cleanup(func() {
					if now, err := run.ReadStat(pid); err == nil && now.StartTicks == st.StartTicks {
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
				})
			}
			return pid
		}
	}
	t.Fatal("the escaped process never wrote its PID")
	return 0
}

// checkDead checks that pid is no live process and that the cgroup dir
// is removed.
func checkDead(t *testing.T, pid int, dir string) {
	t.Helper()
	if st, err := run.ReadStat(pid); err == nil && st.Live() {
		t.Errorf("the escaped process %d is alive (state %c)", pid, st.State)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the job's cgroup %s is left (%v)", dir, err)
	}
}

// TestCgroupLeftoversKilled: the job's first process exits by itself and
// leaves behind a process that left its group and ignores SIGTERM; the
// leftovers rule kills it through the job's cgroup, the job is reported
// exited with its own exit code, and the cgroup is removed.
func TestCgroupLeftoversKilled(t *testing.T) {
	h := newHarness(t)
	h.cgroupRoot = testCgroupRoot(t)
	pidfile := filepath.Join(t.TempDir(), "escaped")
	o := shJob(30, escapee(pidfile)+`while [ ! -s `+pidfile+` ]; do sleep 0.01; done; exit 3`, "GPU-a")
	h.conn.set(core.DesiredState{Run: []core.JobOrder{o}, Timing: fastTiming})
	h.start()
	escaped := awaitPID(t, pidfile)
	r := h.awaitJob(0, 30, "exited", func(r core.JobReport) bool { return r.State == core.RunExited })
	if r.ExitCode != 3 || r.Stopped != "" {
		t.Errorf("report %+v; want exit code 3, ended by itself", r)
	}
	checkDead(t, escaped, filepath.Join(h.cgroupRoot, node, "j30"))
}

// TestCgroupRestartDrain: a job with an escaped process outlives an agent
// restart; the new agent adopts it by its cgroup (persisted with the job)
// and its drain kills the escaped process too.
func TestCgroupRestartDrain(t *testing.T) {
	h := newHarness(t)
	h.cgroupRoot = testCgroupRoot(t)
	dir := filepath.Join(h.cgroupRoot, node, "j31")
	pidfile := filepath.Join(t.TempDir(), "escaped")
	o := shJob(31, escapee(pidfile)+`echo ready; wait`, "GPU-a")
	h.conn.set(core.DesiredState{Run: []core.JobOrder{o}, Timing: fastTiming})
	h.start()
	first := h.awaitJob(0, 31, "running", func(r core.JobReport) bool { return r.State == core.RunRunning })
	escaped := awaitPID(t, pidfile)
	awaitState(t, h.dir, "the job's cgroup", func(st savedState) bool { return len(st.Jobs) == 1 && st.Jobs[0].Cgroup == dir })
	h.stop()

	m := h.beats()
	h.start()
	h.awaitJob(m, 31, "running after the restart", func(r core.JobReport) bool { return r.State == core.RunRunning })
	now := time.Now()
	stop := core.StopOrder{
		Job: 31, Reason: core.StopDrain, Reservation: 4,
		TermAt: now.Add(100 * time.Millisecond), KillAt: now.Add(400 * time.Millisecond), Deadline: now.Add(5 * time.Second),
	}
	n := h.conn.set(core.DesiredState{Run: []core.JobOrder{o}, Stop: []core.StopOrder{stop}, Timing: fastTiming})
	r := h.awaitJob(n, 31, "exited", func(r core.JobReport) bool { return r.State == core.RunExited })
	if r.PID != first.PID || r.Stopped != core.StopDrain || r.Margin == nil || *r.Margin < 0 {
		t.Errorf("report %+v; want pid %d drained in time", r, first.PID)
	}
	checkDead(t, escaped, dir)
}

// TestCgroupOwnsGPUProcess: a GPU process that left its job's process
// group is still marked as the job's, by its cgroup.
func TestCgroupOwnsGPUProcess(t *testing.T) {
	h := newHarness(t)
	h.cgroupRoot = testCgroupRoot(t)
	pidfile := filepath.Join(t.TempDir(), "escaped")
	h.conn.set(core.DesiredState{Run: []core.JobOrder{shJob(35, escapee(pidfile)+`echo ready; wait`, "GPU-a")}, Timing: fastTiming})
	h.start()
	escaped := awaitPID(t, pidfile)
	h.gpus.set(func(g *testGPUs) { g.procs["GPU-b"] = []int{escaped} })
	h.await(h.beats(), "the escaped process on GPU-b marked as j35's", func(hb core.Heartbeat) bool {
		g := gpuIn(hb, "GPU-b")
		return len(g.Processes) == 1 && g.Processes[0].PID == escaped && g.Processes[0].Job == 35
	})
}

// TestCgroupCPUTime: the CPU time reported for a job includes that of a
// process nobody waited for.
func TestCgroupCPUTime(t *testing.T) {
	h := newHarness(t)
	h.cgroupRoot = testCgroupRoot(t)
	done := filepath.Join(t.TempDir(), "done")
	// The burner spins in shell builtins until it has used 0.3 s of CPU
	// ((its /proc stat fields 14 and 15, in ticks); ( … & ) leaves it to
	// be reparented at once.
	burn := `sh -c 'while :; do read -r l < /proc/$$/stat; set -- $l; [ $((${14}+${15})) -ge 30 ] && break; done; : > "$0"' ` + done
	h.conn.set(core.DesiredState{Run: []core.JobOrder{shJob(32, `( `+burn+` & ); while [ ! -e `+done+` ]; do sleep 0.02; done`)}, Timing: fastTiming})
	h.start()
	r := h.awaitJob(0, 32, "exited", func(r core.JobReport) bool { return r.State == core.RunExited })
	if r.ExitCode != 0 || r.CPUSeconds < 0.3 {
		t.Errorf("report %+v; want exit 0 and at least the 0.3 s of CPU the un-waited child used", r)
	}
}

// TestCgroupRootUnusable: a cgroup root that is a plain directory leaves
// the jobs in their process groups; they run all the same.
func TestCgroupRootUnusable(t *testing.T) {
	h := newHarness(t)
	h.cgroupRoot = t.TempDir()
	h.conn.set(core.DesiredState{Run: []core.JobOrder{shJob(33, `echo ran`)}, Timing: fastTiming})
	h.start()
	r := h.awaitJob(0, 33, "exited", func(r core.JobReport) bool { return r.State == core.RunExited })
	if r.ExitCode != 0 {
		t.Errorf("report %+v; want exit 0", r)
	}
	if h.agent.cgroupRoot != "" {
		t.Errorf("the agent took %q as its cgroup root", h.agent.cgroupRoot)
	}
	if _, err := os.Stat(filepath.Join(h.cgroupRoot, "j33")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a directory for the job was made in the plain directory (%v)", err)
	}
	st, err := loadState(h.dir)
	if err != nil || len(st.Jobs) != 1 || st.Jobs[0].Cgroup != "" {
		t.Errorf("state %+v, %v; want the job without a cgroup", st.Jobs, err)
	}
}

// TestCgroupJobWithoutCgroup: a job whose cgroup cannot be made (the root
// is no cgroup any more) runs in its process group only, and the agent
// notes it.
func TestCgroupJobWithoutCgroup(t *testing.T) {
	h := newHarness(t)
	a := h.start(func(a *Agent) { a.cgroupRoot = filepath.Join(t.TempDir(), "gone") })
	h.conn.set(core.DesiredState{Run: []core.JobOrder{shJob(34, `echo ran`)}, Timing: fastTiming})
	r := h.awaitJob(0, 34, "exited", func(r core.JobReport) bool { return r.State == core.RunExited })
	if r.ExitCode != 0 {
		t.Errorf("report %+v; want exit 0", r)
	}
	if !a.cgroupWarned.Load() {
		t.Error("the agent did not note the job's missing cgroup")
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func TestCgroup2Mount(t *testing.T) {
	tests := []struct {
		name            string
		mountinfo       string
		wantMount, root string
		ok              bool
	}{
		{
			name:      "unified",
			mountinfo: "22 1 0:21 / /sys rw - sysfs sysfs rw\n35 22 0:30 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw,nsdelegate\n",
			wantMount: "/sys/fs/cgroup", root: "/", ok: true,
		},
		{
			name: "hybrid",
			mountinfo: "30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n" +
				"31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n" +
				"40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n",
			wantMount: "/sys/fs/cgroup/unified", root: "/", ok: true,
		},
		{
			name:      "elsewhere, escaped, in a namespace",
			mountinfo: "50 1 0:40 /lxc/c1 /mnt/cg\\040v2 rw - cgroup2 none rw\n",
			wantMount: "/mnt/cg v2", root: "/lxc/c1", ok: true,
		},
		{name: "v1 only", mountinfo: "31 30 0:28 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"},
		{name: "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mount, root, ok := cgroup2Mount([]byte(tt.mountinfo))
			if mount != tt.wantMount || root != tt.root || ok != tt.ok {
				t.Errorf("cgroup2Mount = %q, %q, %v; want %q, %q, %v", mount, root, ok, tt.wantMount, tt.root, tt.ok)
			}
		})
	}
}

func FuzzCgroup2Mount(f *testing.F) {
	f.Add([]byte("35 22 0:30 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw\n"))
	f.Add([]byte("50 1 0:40 /x /mnt/a\\040b rw - cgroup2 none rw\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if mount, _, ok := cgroup2Mount(b); ok && mount == "" {
			t.Errorf("cgroup2Mount(%q) found an empty mount point", b)
		}
	})
}

// TestDelegatedCgroupOutside: an agent whose cgroup is at the root of the
// mount, or not below the mount's root at all, has nothing delegated.
func TestDelegatedCgroupOutside(t *testing.T) {
	for _, tt := range []struct{ mountRoot, own string }{
		{"/", "/"},
		{"/lxc/c1", "/lxc/c1"},
		{"/lxc/c1", "/lxc/c10/agent"},
		{"/lxc/c1", "/other"},
	} {
		if got := delegatedCgroup("/sys/fs/cgroup", tt.mountRoot, tt.own); got != "" {
			t.Errorf("delegatedCgroup(mount root %q, own %q) = %q, want none", tt.mountRoot, tt.own, got)
		}
	}
}

// TestDelegatedCgroup: the jobs go to the topmost cgroup, from the
// agent's own upwards, that systemd marked delegated (Delegate=yes).
func TestDelegatedCgroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("marking a cgroup delegated (trusted.delegate) takes root")
	}
	base := testCgroupRoot(t)
	mount := cgroupMount(base)
	unit := filepath.Join(base, "gpucal-agent.service")
	sub := filepath.Join(unit, "agent")
	plain := filepath.Join(base, "session.scope")
	for _, d := range []string{unit, sub, plain} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Setxattr(unit, "trusted.delegate", []byte("1"), 0); err != nil {
		t.Skipf("cannot mark a cgroup delegated here: %v", err)
	}
	rel := func(dir string) string { return strings.TrimPrefix(dir, mount) }
	tests := []struct {
		name, own, want string
	}{
		{"DelegateSubgroup=agent", rel(sub), unit},
		{"Delegate=yes alone", rel(unit), unit},
		{"not delegated", rel(plain), ""},
		{"the root", "/", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := delegatedCgroup(mount, "/", tt.own); got != tt.want {
				t.Errorf("delegatedCgroup(%q) = %q, want %q", tt.own, got, tt.want)
			}
		})
	}
	root := filepath.Join(unit, delegatedJobs)
	if err := prepareCgroupRoot(root); err != nil {
		t.Fatalf("prepareCgroupRoot(%s): %v", root, err)
	}
	if !run.IsCgroup(root) {
		t.Errorf("%s is not a cgroup", root)
	}
}

// TestDefaultCgroupRoot: on a machine with a cgroup v2 hierarchy the agent
// may write, DefaultCgroupRoot finds a place for the jobs' cgroups there.
func TestDefaultCgroupRoot(t *testing.T) {
	base := testCgroupRoot(t) // skips where there is none
	if top := filepath.Join(cgroupMount(base), topLevelJobs); !exists(top) {
		t.Cleanup(func() { _ = syscall.Rmdir(top) }) // made by the test: not left behind
	}
	root := DefaultCgroupRoot()
	if root == "" {
		t.Fatalf("no cgroup root, though %s could be made", base)
	}
	if !run.IsCgroup(root) || (filepath.Base(root) != topLevelJobs && filepath.Base(root) != delegatedJobs) {
		t.Errorf("DefaultCgroupRoot() = %q; want a cgroup named %s or %s", root, topLevelJobs, delegatedJobs)
	}
	if entries, _ := os.ReadDir(root); len(entries) > 0 {
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "probe-") {
				t.Errorf("the probe %s is left in %s", e.Name(), root)
			}
		}
	}
	t.Logf("DefaultCgroupRoot() = %s", root)
}
