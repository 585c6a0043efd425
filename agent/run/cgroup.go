package run

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
	"time"
)

// cgroup2Magic is CGROUP2_SUPER_MAGIC, statfs's type of a cgroup v2 file
// system.
const cgroup2Magic = 0x63677270

// Knobs that tests turn off to take the paths older kernels take.
var (
	// cloneIntoCgroup starts a job inside its cgroup with clone3
	// (CLONE_INTO_CGROUP, Linux 5.7); off, the job's PID is written to
	// cgroup.procs right after it started.
	cloneIntoCgroup = true
	// useCgroupKill kills a cgroup with cgroup.kill (Linux 5.14); off,
	// each process cgroup.procs lists gets SIGKILL.
	useCgroupKill = true
)

// removeCgroupFor bounds how long removing an emptied cgroup is retried:
// rmdir fails with EBUSY while exiting processes linger in it.
const removeCgroupFor = 2 * time.Second

// IsCgroup reports whether dir is a directory of a cgroup v2 hierarchy.
func IsCgroup(dir string) bool {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return false
	}
	return int64(st.Type) == cgroup2Magic
}

// Usage is a job's resource use as its cgroup counts it: every process
// that was ever in the cgroup, whether anybody waited for it or not.
type Usage struct {
	// UserTime and SystemTime are cpu.stat's user_usec and system_usec.
	UserTime, SystemTime time.Duration
	// MemoryPeak is memory.peak in bytes: the most memory charged to the
	// cgroup at once, page cache included. It is 0 when the memory
	// controller is not enabled for the cgroup (or the kernel is older
	// than 5.19).
	MemoryPeak int64
}

// CPU is the CPU time, user and system.
func (u Usage) CPU() time.Duration { return u.UserTime + u.SystemTime }

// makeCgroup creates the cgroup dir for a job (0755; one left there is
// used as it is) and opens it for clone3. Its parent must be a cgroup v2
// directory: a plain directory would take the mkdir and mean nothing.
func makeCgroup(dir string) (*os.File, error) {
	if parent := filepath.Dir(dir); !IsCgroup(parent) {
		return nil, fmt.Errorf("creating the job's cgroup: %s is not a cgroup v2 directory", parent)
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("creating the job's cgroup: %w", err)
	}
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("opening the job's cgroup: %w", err)
	}
	return f, nil
}

// cloneUnsupported reports whether err, from starting a process with
// UseCgroupFD, says that clone3 cannot put it in the cgroup: no clone3
// (ENOSYS, before Linux 5.3), no CLONE_INTO_CGROUP (E2BIG or EINVAL,
// before 5.7), a seccomp filter or a permission (EPERM), a cgroup that
// takes no processes this way (EOPNOTSUPP).
func cloneUnsupported(err error) bool {
	for _, e := range []syscall.Errno{syscall.ENOSYS, syscall.E2BIG, syscall.EINVAL, syscall.EPERM, syscall.EOPNOTSUPP} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// joinCgroup moves process pid into the cgroup dir.
func joinCgroup(dir string, pid int) error {
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
		return fmt.Errorf("moving the job into its cgroup: %w", err)
	}
	return nil
}

// cgroupPIDs lists the processes in the cgroup dir (cgroup.procs, which
// lists no zombie). A cgroup that is no longer there has none.
func cgroupPIDs(dir string) ([]int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return parsePIDs(b)
}

// parsePIDs reads cgroup.procs: one process ID a line.
func parsePIDs(b []byte) ([]int, error) {
	var pids []int
	for line := range bytes.Lines(b) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		pid, err := strconv.Atoi(string(line))
		if err != nil || pid <= 0 {
			return nil, fmt.Errorf("cgroup.procs: %q is not a process ID", line)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

// cgroupEmpty reports whether no live process is left in the cgroup dir:
// cgroup.events says "populated 0" (zombies do not count), or the cgroup
// is gone. When neither it nor cgroup.procs can be read, it answers true:
// Stop then relies on the process group alone rather than wait forever.
func cgroupEmpty(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	if err == nil {
		if populated, ok := parseKeyed(b)["populated"]; ok {
			return populated == 0
		}
	}
	pids, err := cgroupPIDs(dir)
	return err != nil || len(pids) == 0
}

// parseKeyed reads a flat keyed file of the cgroup interface, as
// cgroup.events and cpu.stat are: "key value" lines. Lines that are not
// are skipped.
func parseKeyed(b []byte) map[string]int64 {
	m := map[string]int64{}
	for line := range bytes.Lines(b) {
		k, v, ok := strings.Cut(strings.TrimSpace(string(line)), " ")
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
			m[k] = n
		}
	}
	return m
}

// readUsage reads the resource use the cgroup dir counts. It fails when
// cpu.stat cannot be read (the cgroup is gone); memory.peak is optional.
func readUsage(dir string) (Usage, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		return Usage{}, err
	}
	stat := parseKeyed(b)
	u := Usage{
		UserTime:   time.Duration(max(stat["user_usec"], 0)) * time.Microsecond,
		SystemTime: time.Duration(max(stat["system_usec"], 0)) * time.Microsecond,
	}
	if b, err := os.ReadFile(filepath.Join(dir, "memory.peak")); err == nil {
		if n, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64); err == nil && n > 0 {
			u.MemoryPeak = n
		}
	}
	return u, nil
}

// signalCgroup sends sig to the processes in the cgroup dir and returns
// how many it found there. SIGKILL goes through cgroup.kill, which also
// catches processes forked meanwhile; without it (before Linux 5.14)
// each listed process gets SIGKILL. Other signals skip the members of
// process group pgid, which have had them already: a job that takes a
// second SIGTERM as "quit now" must not get two.
func signalCgroup(dir string, sig syscall.Signal, pgid int) (int, error) {
	pids, err := cgroupPIDs(dir)
	if err != nil || len(pids) == 0 {
		return 0, err
	}
	if sig == syscall.SIGKILL && useCgroupKill {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0); err == nil {
			return len(pids), nil
		}
	}
	var n int
	var first error
	for _, pid := range pids {
		if sig != syscall.SIGKILL {
			if st, err := ReadStat(pid); err != nil || st.PGID == pgid {
				continue // gone, or signalled with its group
			}
		}
		switch err := syscall.Kill(pid, sig); {
		case err == nil:
			n++
		case errors.Is(err, syscall.ESRCH):
		case first == nil:
			first = fmt.Errorf("process %d: %w", pid, err)
		}
	}
	return n, first
}

// removeCgroup removes the emptied cgroup dir, retrying for a little
// while rmdir says it is busy: processes killed a moment ago may still be
// on their way out. A cgroup already gone is no error.
func removeCgroup(dir string) error {
	deadline := time.Now().Add(removeCgroupFor)
	for {
		err := syscall.Rmdir(dir)
		switch {
		case err == nil, errors.Is(err, syscall.ENOENT):
			return nil
		case !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline):
			return fmt.Errorf("removing the job's cgroup %s: %w", dir, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// CgroupOf returns the cgroup v2 path of process pid, as /proc/PID/cgroup
// gives it ("0::/gpucal/j42" is "/gpucal/j42"): relative to the root of
// the hierarchy the process sees.
func CgroupOf(pid int) (string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return "", err
	}
	return ParseProcCgroup(b)
}

// ParseProcCgroup reads the text of /proc/PID/cgroup and returns the
// process's cgroup v2 path, from its "0::" line.
func ParseProcCgroup(b []byte) (string, error) {
	for line := range bytes.Lines(b) {
		if p, ok := bytes.CutPrefix(bytes.TrimRight(line, "\n"), []byte("0::")); ok && len(p) > 0 && p[0] == '/' {
			return string(p), nil
		}
	}
	return "", errors.New("no cgroup v2 line (0::/path)")
}
