package agent

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/gpucal/gpucal/agent/run"
	"github.com/gpucal/gpucal/core"
)

// Where the jobs' cgroups go, under the cgroup v2 mount: a delegated
// subtree's jobs child, else gpucal at the top.
const (
	delegatedJobs = "jobs"
	topLevelJobs  = "gpucal"
)

// delegateXattrs mark a cgroup delegated to the processes in it: systemd
// sets trusted.delegate on the cgroup of a unit with Delegate=yes (since
// v251), user.delegate in a user's manager (since v252).
var delegateXattrs = []string{"trusted.delegate", "user.delegate"}

// DefaultCgroupRoot finds where this agent can make its jobs' cgroups, for
// Config.CgroupRoot, and prepares it; "" when it can make none (no cgroup
// v2 hierarchy, or none it may write), and the jobs then get process
// groups only. In order:
//
//  1. the agent's own cgroup (/proc/self/cgroup) is delegated to it — the
//     topmost of the cgroups from its own upwards that carry systemd's
//     delegate mark, or, for an agent that is not root, its own cgroup
//     when it may write there: <delegated>/jobs. With systemd's
//     DelegateSubgroup=agent the agent sits in <unit>/agent, the unit's
//     cgroup holds no process itself, and controllers can be enabled for
//     the jobs; with Delegate=yes alone the agent shares the unit's
//     cgroup, which then may enable none (cgroup v2 lets a cgroup with
//     processes of its own hand no controller down), so the jobs get
//     membership, cgroup.kill and cpu.stat but no memory.peak.
//  2. <mount>/gpucal at the top of the cgroup v2 mount (/sys/fs/cgroup, or
//     /sys/fs/cgroup/unified on a hybrid system), for a root agent.
//
// Preparing makes the directory and enables the memory and cpu
// controllers for it and its children where the kernel allows.
func DefaultCgroupRoot() string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	mount, mountRoot, ok := cgroup2Mount(b)
	if !ok {
		return ""
	}
	var candidates []string
	if self, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		if own, err := run.ParseProcCgroup(self); err == nil {
			if d := delegatedCgroup(mount, mountRoot, own); d != "" {
				candidates = append(candidates, filepath.Join(d, delegatedJobs))
			}
		}
	}
	candidates = append(candidates, filepath.Join(mount, topLevelJobs))
	for _, root := range candidates {
		if prepareCgroupRoot(root) == nil {
			return root
		}
	}
	return ""
}

// cgroup2Mount finds the cgroup v2 mount in the text of
// /proc/self/mountinfo: /sys/fs/cgroup if it is one, else a hybrid
// system's /sys/fs/cgroup/unified, else the first. It returns the mount
// point and the path within the hierarchy mounted there.
func cgroup2Mount(mountinfo []byte) (mount, root string, ok bool) {
	rank := func(m string) int {
		switch m {
		case "/sys/fs/cgroup":
			return 0
		case "/sys/fs/cgroup/unified":
			return 1
		}
		return 2
	}
	best := 3
	for line := range bytes.Lines(mountinfo) {
		// "36 35 0:30 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw": the
		// fields after the optional ones start at " - ".
		before, after, found := strings.Cut(strings.TrimSpace(string(line)), " - ")
		if !found {
			continue
		}
		f, g := strings.Fields(before), strings.Fields(after)
		if len(f) < 5 || len(g) < 1 || g[0] != "cgroup2" {
			continue
		}
		m := unescapeMountinfo(f[4])
		if r := rank(m); r < best {
			best, mount, root, ok = r, m, unescapeMountinfo(f[3]), true
		}
	}
	return mount, root, ok
}

// unescapeMountinfo undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// delegatedCgroup returns the directory of the cgroup delegated to the
// agent, whose own cgroup is own (as /proc/self/cgroup says) in the
// hierarchy whose root path mountRoot is mounted at mount; "" when none
// is.
func delegatedCgroup(mount, mountRoot, own string) string {
	rel, ok := strings.CutPrefix(own, strings.TrimSuffix(mountRoot, "/"))
	if !ok || !strings.HasPrefix(rel, "/") || rel == "/" {
		return "" // outside the mount, or at its root: nothing is delegated to the agent
	}
	ownDir := filepath.Join(mount, rel)
	// The agent's own cgroup may be an unmarked leaf of the delegated one
	// (DelegateSubgroup=); above that, the marked cgroups must be unbroken.
	from := ownDir
	if !delegated(ownDir) {
		from = filepath.Dir(ownDir)
	}
	top := ""
	for d := from; d != mount && strings.HasPrefix(d, mount+"/"); d = filepath.Dir(d) {
		if !delegated(d) {
			break
		}
		top = d
	}
	if top == "" && os.Geteuid() != 0 && syscall.Access(filepath.Join(ownDir, "cgroup.procs"), 2 /* W_OK */) == nil {
		top = ownDir // an unprivileged agent writes only where it was delegated
	}
	return top
}

// delegated reports whether the cgroup dir carries a delegate mark.
func delegated(dir string) bool {
	buf := make([]byte, 16)
	for _, x := range delegateXattrs {
		if n, err := syscall.Getxattr(dir, x, buf); err == nil && strings.TrimSpace(string(buf[:n])) == "1" {
			return true
		}
	}
	return false
}

// prepareCgroupRoot makes root, the directory of the jobs' cgroups, in a
// cgroup v2 hierarchy, and enables the memory and cpu controllers for
// root (on its parent) and for the jobs (on root) where the kernel allows:
// memory.peak needs them, membership, cgroup.kill and cpu.stat do not.
// It fails when root is not in a cgroup v2 hierarchy or the agent may not
// make a cgroup in it.
func prepareCgroupRoot(root string) error {
	root = filepath.Clean(root)
	// The directories from the deepest that exists down to root: those to
	// make, and to enable controllers in.
	chain := []string{root}
	for {
		_, err := os.Stat(chain[0])
		if err == nil {
			break
		}
		up := filepath.Dir(chain[0])
		if !errors.Is(err, fs.ErrNotExist) || up == chain[0] {
			return fmt.Errorf("the jobs' cgroup root: %w", err)
		}
		chain = append([]string{up}, chain...)
	}
	if len(chain) == 1 {
		chain = append([]string{filepath.Dir(root)}, chain...)
	}
	if !run.IsCgroup(chain[0]) {
		return fmt.Errorf("%s is not a cgroup v2 directory", chain[0])
	}
	for _, dir := range chain[1:] {
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("making the jobs' cgroup root: %w", err)
		}
	}
	if !run.IsCgroup(root) {
		return fmt.Errorf("%s is not a cgroup v2 directory", root)
	}
	for _, dir := range chain {
		for _, c := range []string{"+memory", "+cpu"} {
			// One at a time: a write naming a controller the kernel does
			// not offer here enables none. Failures leave the accounting
			// without memory.peak, no more.
			_ = os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(c), 0)
		}
	}
	// Making a cgroup is what the jobs need: try it.
	probe := filepath.Join(root, "probe-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(probe, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("making a cgroup under %s: %w", root, err)
	}
	if err := syscall.Rmdir(probe); err != nil {
		return fmt.Errorf("removing a cgroup under %s: %w", root, err)
	}
	return nil
}

// hasMemoryController reports whether the jobs' cgroups under root get
// the memory controller, and so memory.peak.
func hasMemoryController(root string) bool {
	b, err := os.ReadFile(filepath.Join(root, "cgroup.subtree_control"))
	return err == nil && strings.Contains(" "+strings.TrimSpace(string(b))+" ", " memory ")
}

// cgroupMount is the mount point of the cgroup v2 hierarchy dir is in:
// the topmost directory above it that is still a cgroup v2 one.
func cgroupMount(dir string) string {
	for run.IsCgroup(filepath.Dir(dir)) && filepath.Dir(dir) != dir {
		dir = filepath.Dir(dir)
	}
	return dir
}

// useCgroupRoot prepares root for the jobs' cgroups and says once which
// it is: cgroups under root, or process groups only.
func (a *Agent) useCgroupRoot(root string) {
	if root == "" {
		a.log.Info("jobs run in process groups only: no cgroup root is set, so a process that leaves its job's group escapes a stop")
		return
	}
	if err := prepareCgroupRoot(root); err != nil {
		a.log.Warn("jobs run in process groups only: the cgroup root cannot be used, so a process that leaves its job's group escapes a stop", "cgroup_root", root, "error", err)
		return
	}
	a.cgroupRoot, a.cgroupMount = filepath.Clean(root), cgroupMount(root)
	a.log.Info("each job runs in a cgroup of its own", "cgroup_root", a.cgroupRoot, "memory_peak", hasMemoryController(a.cgroupRoot))
}

// cgroupPath is the cgroup job id gets; "" without a cgroup root.
func (a *Agent) cgroupPath(id int64) string {
	if a.cgroupRoot == "" {
		return ""
	}
	return filepath.Join(a.cgroupRoot, core.JobName(id))
}

// noteCgroup logs that job id runs without the cgroup it was to get: a
// warning the first time, after that at debug level, since the cause is
// most often the node's and the same for every job.
func (a *Agent) noteCgroup(id int64, err error) {
	if err == nil {
		return
	}
	log := a.log.With("job", core.JobName(id))
	if a.cgroupWarned.CompareAndSwap(false, true) {
		log.Warn("the job runs without a cgroup, in its process group only; so may later jobs, logged at debug level", "error", err)
		return
	}
	log.Debug("the job runs without a cgroup, in its process group only", "error", err)
}
