package progress

import "strconv"

// maxEpochs bounds the epoch numbers read from a line; a larger one is not
// an epoch count (and would overflow the arithmetic below).
const maxEpochs = 1_000_000

// counting is how a line numbers its epochs.
type counting int

const (
	// countingUnsure is "Epoch 3/10" as Keras or a user's script prints it:
	// Keras counts from 1, a script's `for epoch in range(10)` from 0. It
	// reads as counted from 1 unless the epoch is 0 or the Parser has seen
	// an epoch 0 before (Parser.zeroBased).
	countingUnsure counting = iota
	// countingLightning is PyTorch Lightning's: "Epoch 2" is the third
	// epoch, and the rich bar's "Epoch 2/9" means the third of ten (it
	// prints the last epoch's index, max_epochs-1).
	countingLightning
)

// epochText is an epoch as a line prints it; the zero value is a line
// that shows none.
type epochText struct {
	shown bool
	n     int // the number after "Epoch"
	of    int // the number after the slash; -1 when there is none
	how   counting
}

// readEpoch turns the digits of "Epoch n" or "Epoch n/of" into an
// epochText; of is "" when the line has no slash. It fails on numbers past
// maxEpochs.
func readEpoch(n, of string, how counting) (epochText, bool) {
	e := epochText{shown: true, of: -1, how: how}
	var ok bool
	if e.n, ok = smallInt(n); !ok {
		return epochText{}, false
	}
	if of != "" {
		if e.of, ok = smallInt(of); !ok {
			return epochText{}, false
		}
	}
	return e, true
}

// smallInt reads a number of at most maxEpochs.
func smallInt(s string) (int, bool) {
	v, err := strconv.Atoi(s)
	return v, err == nil && v >= 0 && v <= maxEpochs
}

// place returns the epoch's index counted from 0 and the number of epochs
// (0 when not shown). index is -1 when the line shows no epoch; ok is false
// when the numbers contradict each other ("Epoch 11/10", "Epoch 3/0").
// zeroBased says the job has been seen to count its epochs from 0.
func (e epochText) place(zeroBased bool) (index, epochs int, ok bool) {
	switch {
	case !e.shown:
		return -1, 0, true
	case e.how == countingLightning && e.of < 0:
		return e.n, 0, true
	case e.how == countingLightning:
		return e.n, e.of + 1, e.n <= e.of
	case e.of < 0 && (zeroBased || e.n == 0):
		return e.n, 0, true
	case e.of < 0:
		return e.n - 1, 0, true
	case (zeroBased || e.n == 0) && e.n < e.of:
		return e.n, e.of, true
	case e.n >= 1 && e.n <= e.of:
		return e.n - 1, e.of, true
	default:
		return 0, 0, false
	}
}

// teachesZero reports whether the line shows that its job counts epochs
// from 0: an unsure "Epoch 0".
func (e epochText) teachesZero() bool {
	return e.shown && e.how == countingUnsure && e.n == 0
}
