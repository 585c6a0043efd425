package core

import (
	"math"
	"testing"
	"time"
)

func TestDecayedUsage(t *testing.T) {
	now := time.Date(2030, 1, 7, 9, 0, 0, 0, time.UTC)
	week := FairShareHalfLife
	rs := []UsageRecord{
		{Job: 1, Project: "nlp", GPUs: 2, Start: now.Add(-time.Hour), End: now},                        // just now: ~7200
		{Job: 2, Project: "nlp", GPUs: 4, Start: now.Add(-week - time.Hour), End: now.Add(-week)},      // a half-life ago: ~7200
		{Job: 3, Project: "vision", GPUs: 1, Start: now.Add(-30 * time.Minute)},                        // still running
		{Job: 4, Project: "", GPUs: 8, Start: now.Add(-2 * week), End: now.Add(-2*week + time.Hour)},   // two half-lives: ~7200
		{Job: 5, Project: "vision", GPUs: 8, Start: now.Add(-time.Hour), End: now.Add(-2 * time.Hour)}, // ends before it starts: ignored
	}
	got := decayedUsage(rs, now, week)
	want := map[string]float64{"nlp": 14400, "vision": 1800, "": 7200}
	for p, w := range want {
		if math.Abs(got[p]-w)/w > 0.01 {
			t.Errorf("usage[%q] = %.1f, want about %.0f", p, got[p], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("usage has projects %v, want %v", got, want)
	}
}
