package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestSystemdUnits checks deploy/systemd: each unit starts a gpucal
// command with flags that command has, and, where systemd-analyze is
// installed, systemd accepts the unit.
func TestSystemdUnits(t *testing.T) {
	units, err := filepath.Glob("../../deploy/systemd/*.service")
	if err != nil || len(units) < 2 {
		t.Fatalf("deploy/systemd has %d units (%v), want the server's and the agent's", len(units), err)
	}
	analyze, _ := exec.LookPath("systemd-analyze")
	for _, unit := range units {
		t.Run(filepath.Base(unit), func(t *testing.T) {
			text, err := os.ReadFile(unit)
			if err != nil {
				t.Fatal(err)
			}
			args := execStart(t, string(text))
			if args[0] != "/usr/local/bin/gpucal" || len(args) < 2 {
				t.Fatalf("ExecStart %q: want /usr/local/bin/gpucal and a command", args)
			}
			var out bytes.Buffer
			e := &env{stdout: &out, stderr: &out, getenv: func(string) string { return "" }}
			if code := run(context.Background(), e, []string{args[1], "--help"}); code != 0 {
				t.Fatalf("gpucal %s --help: exit %d\n%s", args[1], code, out.String())
			}
			for _, a := range args[2:] {
				if flag, ok := strings.CutPrefix(a, "--"); ok && !strings.Contains(out.String(), "  -"+strings.SplitN(flag, "=", 2)[0]+" ") {
					t.Errorf("gpucal %s has no flag --%s", args[1], flag)
				}
			}
			if analyze == "" {
				t.Log("systemd-analyze is not installed: the unit's syntax is not checked")
				return
			}
			// systemd-analyze wants the program to exist: point it at one that does.
			copy := filepath.Join(t.TempDir(), filepath.Base(unit))
			if err := os.WriteFile(copy, bytes.ReplaceAll(text, []byte("/usr/local/bin/gpucal"), []byte("/bin/true")), 0o644); err != nil {
				t.Fatal(err)
			}
			// It exits 0 on unknown keys, so any word from it counts too.
			if out, err := exec.Command(analyze, "verify", copy).CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
				t.Errorf("systemd-analyze verify: %v\n%s", err, out)
			}
		})
	}
}

// execStart returns the ExecStart command line of a unit, split into words.
func execStart(t *testing.T, unit string) []string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^ExecStart=(.+)$`).FindAllStringSubmatch(unit, -1)
	if len(m) != 1 {
		t.Fatalf("%d ExecStart lines, want one", len(m))
	}
	return strings.Fields(m[0][1])
}
