// Package gpucal_test holds the architecture rules of DESIGN.md §4 as a
// test, so that a forbidden import fails `go test ./...` with a message
// that names it. The module root has no Go package of its own; this
// test-only package lives here so that the rules sit beside go.mod.
package gpucal_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const module = "github.com/gpucal/gpucal"

// adapters are the packages that import core and never each other; each
// rule covers the package and those below it (bot covers bot/slack). One
// that does not exist yet is simply skipped.
var adapters = []string{"bot", "web", "agent", "store", "sim", "notify", "scheduler"}

// bunOwners may import bun; nobody else may (STYLE: bun stays inside store).
var bunOwners = []string{"store"}

const bun = "github.com/uptrace/bun"

// goPackage is the part of `go list -json` the rules read.
type goPackage struct {
	ImportPath string
	Standard   bool
	Imports    []string
	Error      *struct{ Err string }
}

func TestDependencies(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH: %v", err)
	}
	cmd := exec.Command(goTool, "list", "-e", "-deps", "-json", "./...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	pkgs, err := decodePackages(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := pkgs[module+"/core"]; !ok {
		t.Fatalf("go list did not list %s/core; is the test running at the module root?", module)
	}
	for _, p := range pkgs {
		if p.Error != nil && inModule(p.ImportPath) {
			t.Logf("go list could not load %s (its own build will fail): %s", p.ImportPath, p.Error.Err)
		}
	}
	for _, v := range violations(pkgs) {
		t.Error(v)
	}
}

func decodePackages(out []byte) (map[string]*goPackage, error) {
	pkgs := map[string]*goPackage{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p goPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return pkgs, nil
		} else if err != nil {
			return nil, fmt.Errorf("decoding go list output: %w", err)
		}
		pkgs[p.ImportPath] = &p
	}
}

// violations returns one message per broken rule, sorted.
func violations(pkgs map[string]*goPackage) []string {
	var out []string
	for _, path := range slices.Sorted(maps.Keys(pkgs)) {
		p := pkgs[path]
		if !inModule(path) {
			continue
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(path, module), "/")
		for _, imp := range p.Imports {
			dep := pkgs[imp]
			standard := dep != nil && dep.Standard
			switch {
			case rel == "core" && !standard:
				out = append(out, fmt.Sprintf("core imports %s: core may import only the standard library (DESIGN.md §4)", imp))
			case rel == "core/coretest" && !standard && imp != module+"/core":
				out = append(out, fmt.Sprintf("core/coretest imports %s: it may import only core and the standard library", imp))
			case under(imp, bun) && !slices.ContainsFunc(bunOwners, func(o string) bool { return under(rel, o) }):
				out = append(out, fmt.Sprintf("%s imports %s: only store may import bun (STYLE.md habit 10)", rel, imp))
			}
		}
		if from := adapterOf(rel); from != "" {
			for _, to := range adapters {
				if to == from {
					continue
				}
				if chain := importChain(pkgs, path, func(q string) bool { return under(q, module+"/"+to) }); chain != nil {
					out = append(out, fmt.Sprintf("%s depends on %s (%s): adapters import core, never each other (DESIGN.md §4)",
						rel, to, strings.Join(trimModule(chain), " → ")))
				}
			}
		}
	}
	return out
}

// importChain returns the shortest import path from pkg to a package for
// which target is true, or nil when there is none.
func importChain(pkgs map[string]*goPackage, from string, target func(string) bool) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if cur != from && target(cur) {
			var chain []string
			for p := cur; p != ""; p = prev[p] {
				chain = append(chain, p)
			}
			slices.Reverse(chain)
			return chain
		}
		p := pkgs[cur]
		if p == nil || p.Standard {
			continue
		}
		for _, imp := range p.Imports {
			if _, seen := prev[imp]; !seen {
				prev[imp] = cur
				queue = append(queue, imp)
			}
		}
	}
	return nil
}

func adapterOf(rel string) string {
	for _, a := range adapters {
		if under(rel, a) {
			return a
		}
	}
	return ""
}

// under reports whether path is dir or inside it.
func under(path, dir string) bool { return path == dir || strings.HasPrefix(path, dir+"/") }

func inModule(path string) bool { return under(path, module) }

func trimModule(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = strings.TrimPrefix(strings.TrimPrefix(p, module), "/")
	}
	return out
}

// TestViolations checks the rules themselves on made-up import graphs, so
// that a green TestDependencies means something.
func TestViolations(t *testing.T) {
	std := func(path string) *goPackage { return &goPackage{ImportPath: path, Standard: true} }
	pkg := func(path string, imports ...string) *goPackage { return &goPackage{ImportPath: path, Imports: imports} }
	m := func(rel string) string { return module + "/" + rel }
	graph := func(ps ...*goPackage) map[string]*goPackage {
		out := map[string]*goPackage{"fmt": std("fmt"), "time": std("time"), bun: pkg(bun), bun + "/dialect/pgdialect": pkg(bun + "/dialect/pgdialect"),
			"github.com/google/uuid": pkg("github.com/google/uuid")}
		for _, p := range ps {
			out[p.ImportPath] = p
		}
		return out
	}
	tests := []struct {
		name string
		pkgs map[string]*goPackage
		want []string
	}{
		{
			name: "the intended shape",
			pkgs: graph(pkg(m("core"), "fmt", "time"), pkg(m("core/coretest"), m("core"), "time"),
				pkg(m("store"), m("core"), bun, m("migrations")), pkg(m("migrations")), pkg(m("store/storetest"), m("store"), bun),
				pkg(m("web"), m("core")), pkg(m("bot"), m("core")), pkg(m("bot/slack"), m("bot"), m("core")),
				pkg(m("cmd/gpucal"), m("web"), m("store"), m("bot/slack"))),
		},
		{
			name: "core imports a third-party package",
			pkgs: graph(pkg(m("core"), "fmt", "github.com/google/uuid")),
			want: []string{"core imports github.com/google/uuid: core may import only the standard library (DESIGN.md §4)"},
		},
		{
			name: "core imports a module package",
			pkgs: graph(pkg(m("core"), m("migrations")), pkg(m("migrations"))),
			want: []string{"core imports github.com/gpucal/gpucal/migrations: core may import only the standard library (DESIGN.md §4)"},
		},
		{
			name: "coretest imports a third-party package",
			pkgs: graph(pkg(m("core")), pkg(m("core/coretest"), m("core"), "github.com/google/uuid")),
			want: []string{"core/coretest imports github.com/google/uuid: it may import only core and the standard library"},
		},
		{
			name: "web imports bun",
			pkgs: graph(pkg(m("core")), pkg(m("web"), m("core"), bun+"/dialect/pgdialect")),
			want: []string{"web imports github.com/uptrace/bun/dialect/pgdialect: only store may import bun (STYLE.md habit 10)"},
		},
		{
			name: "an adapter reaches another through a helper",
			pkgs: graph(pkg(m("core")), pkg(m("store"), m("core")), pkg(m("internal/x"), m("store")),
				pkg(m("bot/discord"), m("internal/x"))),
			want: []string{"bot/discord depends on store (bot/discord → internal/x → store): adapters import core, never each other (DESIGN.md §4)"},
		},
		{
			name: "web imports a store subpackage",
			pkgs: graph(pkg(m("core")), pkg(m("store/sqlite"), m("core")), pkg(m("web"), m("store/sqlite"))),
			want: []string{"web depends on store (web → store/sqlite): adapters import core, never each other (DESIGN.md §4)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := violations(tt.pkgs)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("violations mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
