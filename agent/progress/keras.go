package progress

import (
	"regexp"
	"strings"
)

// kerasStep matches a Keras step line, the counts first:
//
//	120/500 [=====>........................] - ETA: 1:02 - loss: 0.4123     Keras 2
//	120/500 ━━━━━━━━━━━━━━━━━━━━ 12s 24ms/step - loss: 0.4123               Keras 3
//	500/500 - 12s - 24ms/step - loss: 0.4123                                verbose=2, no bar
//
// Groups: 1 step, 2 total, 3 the rest. The bar (or, without one, the time
// after the dash) is required, so "3/4 shards loaded" is not a step line.
var kerasStep = regexp.MustCompile(`^(\d+)/(\d+)\s+(?:\[[=>.]*\]|━+|-\s+\d+(?:\.\d+)?(?:us|µs|ms|s|m|h)\b)(.*)$`)

// kerasHeader matches the line Keras prints as each epoch begins, "Epoch
// 3/10", alone on its line. Scripts print the same, sometimes counting
// from 0 (see countingUnsure).
var kerasHeader = regexp.MustCompile(`^(?i:epoch)\s+(\d+)\s*/\s*(\d+)$`)

// readKeras reads a Keras step line. Its epoch is on the header line
// before it, which the Parser remembers.
func readKeras(s string) (reading, bool) {
	if s == "" || s[0] < '0' || s[0] > '9' {
		return reading{}, false
	}
	m := kerasStep.FindStringSubmatch(s)
	if m == nil {
		return reading{}, false
	}
	step, total, ok := readCounts(m[1], m[2])
	return reading{
		format: FormatKeras,
		bar:    true,
		step:   step,
		total:  total,
		rate:   firstRate(m[3], "/step"),
	}, ok
}

// readHeader reads an epoch header, "Epoch 3/10".
func readHeader(s string) (reading, bool) {
	if len(s) < len("epoch") || !strings.EqualFold(s[:len("epoch")], "epoch") {
		return reading{}, false
	}
	m := kerasHeader.FindStringSubmatch(s)
	if m == nil {
		return reading{}, false
	}
	e, ok := readEpoch(m[1], m[2], countingUnsure)
	return reading{format: FormatKeras, epoch: e}, ok
}
