package progress

import (
	"math"
	"regexp"
	"strconv"
	"strings"
)

// tqdmBar matches tqdm's default layout, which PyTorch Lightning and the
// Hugging Face Trainer keep:
//
//	{desc}: {percentage:3.0f}%|{bar}| {n}/{total} [{elapsed}<{remaining}, {rate}{postfix}]
//
// Groups: 1 description (with its colon), 2 percentage, 3 bar, 4 n, 5 total,
// 6 what the brackets hold. A bar without a total ("450it [01:23,
// 5.48it/s]") has no percentage and does not match.
var tqdmBar = regexp.MustCompile(`^(.*?)(\d{1,3})%\|([^|]*)\|\s*(\d+)/(\d+)(?:\s+\[([^\]]*)\]|\s|$)`)

// lightningTqdm matches the descriptions of PyTorch Lightning's tqdm bars;
// group 1 is the epoch of the training bar, "Epoch 2".
var lightningTqdm = regexp.MustCompile(`^(?:Epoch (\d+)|(?:Sanity Checking|Validation|Testing|Predicting)(?: DataLoader \d+)?)$`)

// scriptEpoch matches an epoch in the description a script gives its bar:
// "Epoch 3/10", "train epoch 3".
var scriptEpoch = regexp.MustCompile(`(?i)\bepoch\s*(\d+)(?:\s*/\s*(\d+))?`)

// readTqdm reads a tqdm bar. Besides the layout, the bar must be drawn with
// tqdm's characters and the percentage must agree with the counts, so that
// a table row such as "| 45%| a | 3/4 |" is not taken for one. Counts
// scaled by unit_scale ("2.24G/4.98G", downloads) are not read.
func readTqdm(s string) (reading, bool) {
	if !strings.Contains(s, "%|") {
		return reading{}, false
	}
	m := tqdmBar.FindStringSubmatch(s)
	if m == nil || !isTqdmBar(m[3]) {
		return reading{}, false
	}
	step, total, ok := readCounts(m[4], m[5])
	if !ok || !percentAgrees(m[2], step, total) {
		return reading{}, false
	}
	desc := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(m[1]), ":"))
	rd := reading{
		format: FormatTqdm,
		bar:    true,
		desc:   desc,
		step:   step,
		total:  total,
		rate:   tqdmRate(m[6]),
		eval:   isEval(desc),
	}
	if m := lightningTqdm.FindStringSubmatch(desc); m != nil {
		rd.format = FormatLightning
		if m[1] != "" {
			rd.epoch, ok = readEpoch(m[1], "", countingLightning)
		}
	} else if m := scriptEpoch.FindStringSubmatch(desc); m != nil {
		rd.epoch, ok = readEpoch(m[1], m[2], countingUnsure)
	}
	return rd, ok
}

// isTqdmBar reports whether bar is drawn with tqdm's characters: the
// Unicode eighth blocks or, with ascii=True, '#' and the digits 1–9.
func isTqdmBar(bar string) bool {
	for _, c := range bar {
		if c != ' ' && c != '#' && (c < '0' || c > '9') && (c < '█' || c > '▏') {
			return false
		}
	}
	return true
}

// percentAgrees reports whether the percentage tqdm printed (rounded to a
// whole number) is that of step out of total.
func percentAgrees(percent string, step, total int64) bool {
	p, err := strconv.Atoi(percent)
	if err != nil || total <= 0 {
		return false
	}
	return math.Abs(float64(p)-100*float64(step)/float64(total)) <= 1
}

// tqdmRate reads the speed from what a tqdm bar's brackets hold:
// "01:23<01:40,  5.48it/s" or "00:10<00:12, 11.2it/s, v_num=0, loss=0.5".
func tqdmRate(bracket string) float64 {
	_, after, ok := strings.Cut(bracket, ",")
	if !ok {
		return 0
	}
	rate, _, _ := strings.Cut(after, ",")
	return parseRate(rate)
}

// readCounts reads a bar's "n/total".
func readCounts(n, total string) (step, tot int64, ok bool) {
	step, err1 := strconv.ParseInt(n, 10, 64)
	tot, err2 := strconv.ParseInt(total, 10, 64)
	return step, tot, err1 == nil && err2 == nil
}

// parseRate reads a speed as tqdm, rich and Keras print it: items per
// second ("5.48it/s", "2000.00 examples/s") or seconds per item ("1.20s/it",
// "24ms/step"), and returns items per second; 0 when s is not a speed
// ("?it/s").
func parseRate(s string) float64 {
	s = strings.TrimSpace(s)
	end := 0
	for end < len(s) && (s[end] >= '0' && s[end] <= '9' || s[end] == '.') {
		end++
	}
	v, err := strconv.ParseFloat(s[:end], 64)
	if err != nil {
		return 0
	}
	numer, denom, ok := strings.Cut(strings.TrimSpace(s[end:]), "/")
	if !ok {
		return 0
	}
	if denom == "s" {
		return validRate(v)
	}
	switch numer {
	case "s":
		return validRate(1 / v)
	case "ms":
		return validRate(1e3 / v)
	case "us", "µs":
		return validRate(1e6 / v)
	}
	return 0
}
