package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// gpucalCLI is what the gpucal command takes, read from its sources
// (cmd/gpucal, tests left out): flag names and GPUCAL_* variables.
type gpucalCLI struct {
	flags map[string]bool
	env   map[string]bool
}

var (
	flagDecl = regexp.MustCompile(`\bfs\.(?:String|Bool|Int|Int64|Uint|Uint64|Duration|Float64|Func|Text)(?:Var)?\((?:[^,()]+,\s*)?"([a-z][a-z0-9-]*)"`)
	envName  = regexp.MustCompile(`"(GPUCAL_[A-Z0-9_]+)"`)
)

func readCLI(t *testing.T) gpucalCLI {
	t.Helper()
	files, _ := filepath.Glob("../cmd/gpucal/*.go")
	cli := gpucalCLI{flags: map[string]bool{}, env: map[string]bool{}}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range flagDecl.FindAllStringSubmatch(string(b), -1) {
			cli.flags[m[1]] = true
		}
		for _, m := range envName.FindAllStringSubmatch(string(b), -1) {
			cli.env[m[1]] = true
		}
	}
	for _, want := range []string{"addr", "log-format", "metrics-addr", "cgroup-root", "name", "fake-gpus"} {
		if !cli.flags[want] {
			t.Fatalf("the scan of cmd/gpucal found no flag --%s: fix flagDecl", want)
		}
	}
	for _, want := range []string{"GPUCAL_DB", "GPUCAL_BOOTSTRAP_TOKEN", "GPUCAL_JOIN_TOKEN", "GPUCAL_SLACK_BOT_TOKEN"} {
		if !cli.env[want] {
			t.Fatalf("the scan of cmd/gpucal found no %s: fix envName", want)
		}
	}
	return cli
}

// checkArgs checks a gpucal command line's flags (--x, --x=v).
func (c gpucalCLI) checkArgs(t *testing.T, where string, args []string) {
	t.Helper()
	for _, a := range args {
		if name, ok := strings.CutPrefix(a, "--"); ok {
			name, _, _ = strings.Cut(name, "=")
			if !c.flags[name] {
				t.Errorf("%s: gpucal has no flag --%s", where, name)
			}
		}
	}
}

// checkEnv checks that a GPUCAL_* variable is one gpucal reads.
func (c gpucalCLI) checkEnv(t *testing.T, where, name string) {
	t.Helper()
	if strings.HasPrefix(name, "GPUCAL_") && !c.env[name] {
		t.Errorf("%s: gpucal reads no variable %s", where, name)
	}
}
