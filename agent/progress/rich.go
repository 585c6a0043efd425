package progress

import (
	"regexp"
	"strings"
)

// richBar matches PyTorch Lightning's RichProgressBar:
//
//	{desc} {bar} {n}/{total} {elapsed} • {remaining} {rate}it/s {metrics}
//
// Groups: 1 description, 2 n, 3 total, 4 the rest. Rich draws the bar with
// heavy horizontal lines, the remaining part in another colour.
var richBar = regexp.MustCompile(`^(.*?)\s*[━╸╺]+\s+(\d+)/(\d+)(?:\s+(.*))?$`)

// richEpoch matches the epoch in a rich bar's description: "Epoch 2/9"
// when max_epochs is set, "Epoch 2" when not, "Epoch 2/-2" when it is -1
// (no limit; group 2 is then empty).
var richEpoch = regexp.MustCompile(`^Epoch (\d+)(?:/(\d+)|/-\d+)?$`)

// readRich reads a bar of PyTorch Lightning's RichProgressBar. Its
// description is "Epoch 2/9" when max_epochs is set ("Epoch 2" when not),
// or the name of an evaluation pass ("Validation").
func readRich(s string) (reading, bool) {
	if !strings.ContainsAny(s, "━╸╺") {
		return reading{}, false
	}
	m := richBar.FindStringSubmatch(s)
	if m == nil {
		return reading{}, false
	}
	step, total, ok := readCounts(m[2], m[3])
	if !ok {
		return reading{}, false
	}
	desc := strings.TrimSpace(m[1])
	rd := reading{
		format: FormatLightning,
		bar:    true,
		desc:   desc,
		step:   step,
		total:  total,
		rate:   firstRate(m[4], "/s"),
		eval:   isEval(desc),
	}
	if e := richEpoch.FindStringSubmatch(desc); e != nil {
		rd.epoch, ok = readEpoch(e[1], e[2], countingLightning)
	}
	return rd, ok
}

// firstRate returns the speed in the first space-separated field of s that
// ends with suffix ("/s" for "11.20it/s", "/step" for "24ms/step"), or 0.
func firstRate(s, suffix string) float64 {
	for f := range strings.FieldsSeq(s) {
		if strings.HasSuffix(f, suffix) {
			return parseRate(f)
		}
	}
	return 0
}
