package progress

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestGolden feeds each testdata/*.log to a Parser and compares the reports
// it takes, in order, with testdata/*.golden; run with -update after a
// deliberate change, and read the diff before accepting it.
func TestGolden(t *testing.T) {
	logs, err := filepath.Glob("testdata/*.log")
	if err != nil || len(logs) == 0 {
		t.Fatalf("no testdata/*.log (%v)", err)
	}
	for _, path := range logs {
		name := strings.TrimSuffix(filepath.Base(path), ".log")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			got := reportTable(reportsOf(data))
			golden := strings.TrimSuffix(path, ".log") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -run TestGolden -update to create it)", err)
			}
			if diff := lineDiff(string(want), got); diff != "" {
				t.Errorf("reports of %s differ from %s (-want +got):\n%s", path, golden, diff)
			}
		})
	}
}

// reportsOf returns the reports a Parser takes from chunks written one
// after the other, then flushed.
func reportsOf(chunks ...[]byte) []Report {
	var got []Report
	p := NewParser(func(r Report) { got = append(got, r) })
	for _, c := range chunks {
		p.Write(c)
	}
	p.Flush()
	return got
}

// reportTable writes reports one a line, as the golden files hold them.
func reportTable(rs []Report) string {
	var b strings.Builder
	b.WriteString("# format    fraction  step/total  epoch/epochs  rate/s\n")
	for _, r := range rs {
		fmt.Fprintf(&b, "%-10s  %8.4f  %10s  %12s  %.4g\n", r.Format, r.Fraction,
			fmt.Sprintf("%d/%d", r.Step, r.Total), fmt.Sprintf("%d/%d", r.Epoch, r.Epochs), r.Rate)
	}
	return b.String()
}

// lineDiff returns the lines that differ between want and got, or "".
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := range max(len(w), len(g)) {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n-%s\n+%s\n", i+1, wl, gl)
		}
	}
	return b.String()
}
