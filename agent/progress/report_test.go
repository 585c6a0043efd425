package progress

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

func TestWithinEpoch(t *testing.T) {
	for line, want := range map[string]bool{
		"Epoch 2:  45%|████▌     | 120/267 [00:10<00:12, 11.2it/s]":          true,  // Lightning's tqdm bar
		"Epoch 2/9 ━━━━━━━━━━━━━━━━━━━━ 120/267 0:00:10 • 0:00:12 11.20it/s": false, // its rich bar
		"  9%|▉         | 450/5000 [01:23<14:00,  5.41it/s]":                 false, // no epoch at all
		"Epoch 3/10": false,
	} {
		r, ok := ParseLine(line)
		if !ok {
			t.Fatalf("ParseLine(%q) reports nothing", line)
		}
		if got := r.WithinEpoch(); got != want {
			t.Errorf("ParseLine(%q).WithinEpoch() = %v, want %v", line, got, want)
		}
	}
}

// diffReport describes how got differs from want, or returns "". Fractions
// and rates are compared to 1e-9, since an epoch's share is computed in
// more than one rounding step.
func diffReport(got, want Report) string {
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(b)) }
	g, w := got, want
	g.Fraction, g.Rate, w.Fraction, w.Rate = 0, 0, 0, 0
	if g == w && near(got.Fraction, want.Fraction) && near(got.Rate, want.Rate) {
		return ""
	}
	return fmt.Sprintf("got  %+v\nwant %+v", got, want)
}

// checkReport returns what is wrong with r, whatever the input: the
// invariants every report keeps.
func checkReport(r Report) error {
	switch {
	case !(r.Fraction >= 0 && r.Fraction <= 1):
		return fmt.Errorf("fraction %v outside [0, 1]", r.Fraction)
	case r.Total < 0, r.Step < 0:
		return fmt.Errorf("negative counts %d/%d", r.Step, r.Total)
	case r.Total > 0 && r.Step > r.Total:
		return fmt.Errorf("step %d past total %d", r.Step, r.Total)
	case r.Total == 0 && r.Step != 0:
		return fmt.Errorf("step %d without a total", r.Step)
	case r.Epoch < 0, r.Epochs < 0, r.Epochs > 0 && (r.Epoch < 1 || r.Epoch > r.Epochs):
		return fmt.Errorf("epoch %d of %d", r.Epoch, r.Epochs)
	case !(r.Rate >= 0) || math.IsInf(r.Rate, 0):
		return fmt.Errorf("rate %v", r.Rate)
	case !slices.Contains([]string{FormatTqdm, FormatLightning, FormatKeras, FormatFile}, r.Format):
		return fmt.Errorf("format %q", r.Format)
	}
	return nil
}
