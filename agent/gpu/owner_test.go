package gpu

import (
	"errors"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
)

func TestProcOwnersOfThisProcess(t *testing.T) {
	o, err := ProcOwners("/proc")(os.Getpid())
	if err != nil {
		t.Skipf("no procfs here: %v", err)
	}
	if o.UID != os.Getuid() {
		t.Errorf("UID %d, want %d", o.UID, os.Getuid())
	}
	if me, err := user.Current(); err == nil && o.User != me.Username {
		t.Errorf("user %q, want %q", o.User, me.Username)
	}
}

func TestProcOwners(t *testing.T) {
	root := t.TempDir()
	write := func(pid, status string) {
		if err := os.MkdirAll(filepath.Join(root, pid), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, pid, "status"), []byte(status), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("42", "Name:\tpython\nUmask:\t0022\nState:\tR (running)\nUid:\t1000\t1000\t1000\t1000\nGid:\t1000\t1000\t1000\t1000\n")
	write("43", "Name:\tsetuid\nUid:\t1001\t0\t0\t0\n") // the real UID is the first
	write("44", "Name:\tbroken\nGid:\t1\n")
	write("45", "Uid:\tabc\t0\t0\t0\n")
	write("46", "Uid:\n")
	owner := ProcOwners(root)
	for _, tt := range []struct {
		pid     int
		uid     int
		wantErr string
	}{
		{pid: 42, uid: 1000},
		{pid: 43, uid: 1001},
		{pid: 44, wantErr: "no Uid line"},
		{pid: 45, wantErr: `"abc" is not a user ID`},
		{pid: 46, wantErr: "the Uid line is empty"},
		{pid: 0, wantErr: "not a process ID"},
	} {
		o, err := owner(tt.pid)
		switch {
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("pid %d: %+v, %v; want an error containing %q", tt.pid, o, err, tt.wantErr)
		case tt.wantErr == "" && (err != nil || o.UID != tt.uid):
			t.Errorf("pid %d: %+v, %v; want UID %d", tt.pid, o, err, tt.uid)
		}
	}
	if _, err := owner(99); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a process that has exited: %v, want fs.ErrNotExist", err)
	}
}

func FuzzParseStatusUID(f *testing.F) {
	f.Add([]byte("Name:\tpython\nUid:\t1000\t1000\t1000\t1000\n"))
	f.Add([]byte("Uid:\t-1\n"))
	f.Add([]byte("Uid:"))
	f.Fuzz(func(t *testing.T, status []byte) {
		uid, err := parseStatusUID(status)
		if err == nil && uid < 0 {
			t.Fatalf("parseStatusUID(%q) = %d without an error", status, uid)
		}
	})
}
