package run

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

// Stat is the part of /proc/PID/stat the agent reads about a process.
type Stat struct {
	PID   int
	State byte // R, S, D, T, Z (zombie), X (dead), …
	PGID  int  // its process group
	// CPU is the CPU time it used, user and system, and that of the
	// children it waited for (fields 14 to 17).
	CPU time.Duration
	// StartTicks is when it started, in clock ticks after boot (field 22).
	// With the PID it tells the process from a later one that was given
	// the same PID.
	StartTicks uint64
	RSS        int64 // resident memory in bytes (field 24)
}

// Live reports whether the process is more than a zombie.
func (s Stat) Live() bool { return s.State != 'Z' && s.State != 'X' }

// clockTick is a clock tick of /proc: USER_HZ, 100 on every Linux
// architecture Go supports.
const clockTick = 10 * time.Millisecond

// maxTicks bounds a count of clock ticks (about 3,500 years) so that sums
// of them stay a time.Duration.
const maxTicks = 1 << 40

// ReadStat reads /proc/PID/stat. A process that does not exist (or no
// longer does) gives an error wrapping fs.ErrNotExist.
func ReadStat(pid int) (Stat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Stat{}, err
	}
	return parseStat(b)
}

// parseStat reads the text of /proc/PID/stat: "pid (comm) state ppid pgrp
// …", where comm may hold spaces and parentheses, so the fields are
// counted from the last ')'.
func parseStat(b []byte) (Stat, error) {
	open := bytes.IndexByte(b, '(')
	i := bytes.LastIndexByte(b, ')')
	if open < 1 || i < open {
		return Stat{}, errors.New("stat: no (comm) field")
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b[:open])))
	if err != nil {
		return Stat{}, fmt.Errorf("stat: process ID %q is not a number", bytes.TrimSpace(b[:open]))
	}
	f := bytes.Fields(b[i+1:])
	// f[n-3] is field n of proc(5); rss is field 24.
	if len(f) < 22 || len(f[0]) != 1 {
		return Stat{}, fmt.Errorf("stat: %d fields after comm, want at least 22", len(f))
	}
	num := func(n int) (uint64, error) {
		v, err := strconv.ParseUint(string(f[n-3]), 10, 64)
		if err != nil || v > maxTicks {
			return 0, fmt.Errorf("stat: field %d %q is not a count of clock ticks", n, f[n-3])
		}
		return v, nil
	}
	s := Stat{PID: pid, State: f[0][0]}
	if s.PGID, err = strconv.Atoi(string(f[2])); err != nil {
		return Stat{}, fmt.Errorf("stat: process group %q is not a number", f[2])
	}
	var ticks uint64
	for n := 14; n <= 17; n++ {
		v, err := num(n)
		if err != nil {
			return Stat{}, err
		}
		ticks += v
	}
	s.CPU = time.Duration(ticks) * clockTick
	if s.StartTicks, err = num(22); err != nil {
		return Stat{}, err
	}
	// rss is signed in the kernel's text, and may read negative on a
	// short race; that is no memory.
	if rss, err := strconv.ParseInt(string(f[21]), 10, 64); err == nil && rss > 0 {
		s.RSS = rss * int64(os.Getpagesize())
	}
	return s, nil
}

// Processes lists the processes /proc shows, zombies included, skipping
// those that end while it looks. It fails only when /proc cannot be read.
func Processes() ([]Stat, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []Stat
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if s, err := ReadStat(pid); err == nil {
			out = append(out, s)
		}
	}
	return out, nil
}
