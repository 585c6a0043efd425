package progress

import "strings"

// A reading is what one line says, before its numbers are checked and
// before a Parser adds what earlier lines said.
type reading struct {
	format string
	// bar is false for an epoch header ("Epoch 3/10" on a line of its
	// own), which has no counts.
	bar         bool
	desc        string // the bar's description ("Training", "Epoch 2"); "" when none
	step, total int64
	epoch       epochText
	rate        float64
	// eval says the description names an evaluation pass ("Validation",
	// "Sanity Checking", "Testing"), which never takes over from the
	// training bar (see follow).
	eval bool
}

// report checks the reading's numbers and computes its Fraction; ok is
// false when they cannot describe a job's progress (no total, step past
// total, an epoch past the number of epochs, a header without a count).
// zeroBased says the job has been seen to count its epochs from 0.
func (rd reading) report(zeroBased bool) (r Report, ok bool) {
	index, epochs, ok := rd.epoch.place(zeroBased)
	if !ok {
		return Report{}, false
	}
	var inEpoch float64
	switch {
	case !rd.bar && epochs == 0:
		return Report{}, false
	case rd.bar && !validCounts(rd.step, rd.total):
		return Report{}, false
	case rd.bar:
		inEpoch = float64(rd.step) / float64(rd.total)
	}
	r = Report{
		Fraction: inEpoch,
		Step:     rd.step,
		Total:    rd.total,
		Epoch:    index + 1,
		Epochs:   epochs,
		Rate:     validRate(rd.rate),
		Format:   rd.format,
	}
	if epochs > 0 {
		r.Fraction = (float64(index) + inEpoch) / float64(epochs)
	}
	return r, validFraction(r.Fraction)
}

// barKey tells one progress bar from another: the Hugging Face Trainer's
// training bar from its evaluation bar (another total), a tqdm bar from the
// datasets "Map" bar before it (another description). Digits in the
// description do not count, so "Epoch 3/10" is the same bar as "Epoch 2/10".
type barKey struct {
	format string
	desc   string
	total  int64
}

func (rd reading) key() barKey {
	return barKey{format: rd.format, desc: maskDigits(rd.desc), total: rd.total}
}

// maskDigits replaces each run of digits in s with one '#'.
func maskDigits(s string) string {
	if !strings.ContainsAny(s, "0123456789") {
		return s
	}
	var b strings.Builder
	digits := false
	for _, c := range s {
		isDigit := c >= '0' && c <= '9'
		switch {
		case isDigit && !digits:
			b.WriteByte('#')
		case !isDigit:
			b.WriteRune(c)
		}
		digits = isDigit
	}
	return b.String()
}

// isEval reports whether a bar's description names an evaluation pass:
// PyTorch Lightning's "Sanity Checking", "Validation", "Testing" and
// "Predicting" (with " DataLoader 0" after them), and what scripts commonly
// write.
func isEval(desc string) bool {
	first, _, _ := strings.Cut(strings.TrimSpace(desc), " ")
	switch strings.ToLower(strings.TrimRight(first, ":")) {
	case "eval", "evaluate", "evaluating", "evaluation",
		"predict", "predicting", "prediction",
		"sanity", "test", "testing",
		"val", "valid", "validate", "validating", "validation":
		return true
	}
	return false
}
