package sim

import (
	"bytes"
	"context"
	"flag"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestWriteTable compares the table of a small replay with
// testdata/compare.golden; run with -update after a deliberate change. It
// replays the baselines only, so that the golden file does not move with the
// planner.
func TestWriteTable(t *testing.T) {
	tr := randomTrace(3, 200, true)
	var rs []Result
	for _, p := range []Policy{PolicyFIFO, PolicySJF, PolicyEASY} {
		r, err := Run(context.Background(), tr, Config{Nodes: 4, GPUsPerNode: 4, Policy: p, Reservations: 2, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		r.Wall = 0
		rs = append(rs, r)
	}
	var got bytes.Buffer
	if err := WriteTable(&got, rs); err != nil {
		t.Fatal(err)
	}
	const golden = "testdata/compare.golden"
	if *update {
		if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -run TestWriteTable -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got.String()); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
}

func TestThousands(t *testing.T) {
	for in, want := range map[float64]string{0: "0", 999.4: "999", 1000: "1,000", 1234567.8: "1,234,568", -4200: "-4,200", -0.2: "0"} {
		if got := thousands(in); got != want {
			t.Errorf("thousands(%v) = %q, want %q", in, got, want)
		}
	}
}
