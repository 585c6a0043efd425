package gpu

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
)

// Owner is who runs a process: its real user ID and, when the system can
// name it, the user's login name.
type Owner struct {
	UID  int
	User string // "" when no user database entry has the UID
}

// ProcOwners returns a function that reads a process's owner from the
// procfs mounted at root ("/proc" on a node): the real UID on the Uid line
// of root/PID/status, named through the system's user database. A process
// that has exited gives an error wrapping fs.ErrNotExist.
func ProcOwners(root string) func(pid int) (Owner, error) {
	return func(pid int) (Owner, error) {
		if pid <= 0 {
			return Owner{}, fmt.Errorf("process %d: not a process ID", pid)
		}
		status, err := os.ReadFile(filepath.Join(root, strconv.Itoa(pid), "status"))
		if err != nil {
			return Owner{}, fmt.Errorf("process %d: %w", pid, err)
		}
		uid, err := parseStatusUID(status)
		if err != nil {
			return Owner{}, fmt.Errorf("process %d: %w", pid, err)
		}
		o := Owner{UID: uid}
		if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
			o.User = u.Username
		}
		return o, nil
	}
}

// parseStatusUID reads the real UID from the text of /proc/PID/status,
// whose Uid line holds the real, effective, saved and filesystem UIDs.
func parseStatusUID(status []byte) (int, error) {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "Uid:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return 0, errors.New("status: the Uid line is empty")
		}
		uid, err := strconv.Atoi(fields[0])
		if err != nil || uid < 0 {
			return 0, fmt.Errorf("status: the real UID %q is not a user ID", fields[0])
		}
		return uid, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("status: %w", err)
	}
	return 0, errors.New("status: no Uid line")
}
