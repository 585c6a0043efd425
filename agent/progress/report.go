package progress

import "math"

// The formats a Report is read from.
const (
	// FormatTqdm is a tqdm bar: "Training:  45%|████▌     | 450/1000 [01:23<01:40,  5.48it/s]".
	// The Hugging Face Trainer's bar is a plain tqdm bar and reads as one.
	FormatTqdm = "tqdm"
	// FormatLightning is a bar of PyTorch Lightning, tqdm ("Epoch 2:  45%|…")
	// or rich ("Epoch 2/9 ━━━━ 120/267 0:00:10 • 0:00:12 11.20it/s").
	FormatLightning = "lightning"
	// FormatKeras is a Keras epoch header ("Epoch 3/10") or step line
	// ("120/500 [=====>....] - ETA: 1:02", "120/500 ━━━━ 12s 24ms/step").
	FormatKeras = "keras"
	// FormatFile is a progress file the job writes itself (ParseFile).
	FormatFile = "file"
)

// Report is what one progress bar or progress line says about a job.
type Report struct {
	// Fraction is how much of the job is done, in [0, 1]. It covers the
	// whole job, except when the line shows the epoch but not how many
	// epochs there are (see WithinEpoch): then it covers the current epoch.
	Fraction float64
	// Step and Total are the bar's counts as printed; both are 0 when the
	// line has no bar (an epoch header, a progress file giving a fraction).
	Step, Total int64
	// Epoch is the current epoch counted from 1, whatever the line's own
	// convention (Lightning prints "Epoch 0" for the first), and Epochs is
	// how many there are; each is 0 when the line does not show it.
	Epoch, Epochs int
	// Rate is the bar's speed in its own units (steps, batches, examples)
	// per second; "1.20s/it" and "24ms/step" are inverted. It is 0 when the
	// line shows no speed.
	Rate float64
	// Format names what the report was read from: one of the Format
	// constants.
	Format string
}

// WithinEpoch reports whether Fraction covers only the current epoch: the
// line showed the epoch but not how many there are, as PyTorch Lightning's
// default bar does. A reader that knows the number of epochs from elsewhere
// (the job's hints) can place it in the whole job.
func (r Report) WithinEpoch() bool { return r.Epoch > 0 && r.Epochs == 0 }

// validCounts reports whether step of total is a position a bar can show.
func validCounts(step, total int64) bool { return total > 0 && step >= 0 && step <= total }

// validFraction reports whether f is a fraction of a job.
func validFraction(f float64) bool { return f >= 0 && f <= 1 && !math.IsNaN(f) }

// validRate turns a speed that cannot be one (negative, infinite) into 0,
// the value for "not shown".
func validRate(r float64) float64 {
	if r > 0 && !math.IsInf(r, 0) {
		return r
	}
	return 0
}
