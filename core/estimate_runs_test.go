package core

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRunGroupRank checks the rank of each slot of the ring, before and
// after it wraps.
func TestRunGroupRank(t *testing.T) {
	tests := []struct {
		name  string
		added int
		want  []int // rank of runs[0], runs[1], …
	}{
		{"one", 1, []int{0}},
		{"not full", 3, []int{2, 1, 0}},
		{"full", 4, []int{3, 2, 1, 0}},
		{"wrapped once", 5, []int{0, 3, 2, 1}},
		{"wrapped three", 7, []int{2, 1, 0, 3}},
		{"wrapped around", 8, []int{3, 2, 1, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newRunGroup(4, 0.5)
			for i := range tt.added {
				g.add(obs{x: float64(i)})
			}
			got := make([]int, len(g.runs))
			for i := range g.runs {
				got[i] = g.rank(i)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ranks (-want +got):\n%s", diff)
			}
		})
	}
}
