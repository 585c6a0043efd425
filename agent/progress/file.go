package progress

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ErrNoProgress is returned by ParseFile when the file holds no line yet:
// the job has not reported, which is not a mistake.
var ErrNoProgress = errors.New("progress file: no progress line yet")

// fileLineForms is what ParseFile's errors suggest.
const fileLineForms = `{"fraction":0.42}, {"step":120,"total":1000}, 0.42, 42% or 120/1000`

// The plain line forms of a progress file.
var (
	fileFraction = regexp.MustCompile(`^(?:\d+(?:\.\d*)?|\.\d+)$`)
	filePercent  = regexp.MustCompile(`^(\d+(?:\.\d*)?|\.\d+)\s*%$`)
	fileCounts   = regexp.MustCompile(`^(\d+)\s*/\s*(\d+)$`)
)

// ParseFile reads a progress file, which a job writes itself at the path
// the agent gives it in GPUCAL_PROGRESS_FILE. Its last non-blank line
// counts; it is one of
//
//	{"fraction":0.42}
//	{"step":120,"total":1000}
//	0.42
//	42%
//	120/1000
//
// data may be only the end of the file. A file with no line yet gives
// ErrNoProgress; any other line that is not one of these, or whose numbers
// are out of range, gives an error that quotes it.
func ParseFile(data []byte) (Report, error) {
	line := lastLine(data)
	if line == "" {
		return Report{}, ErrNoProgress
	}
	r, err := parseFileLine(line)
	if err != nil {
		return Report{}, fmt.Errorf("progress file: line %q: %w", clip(line), err)
	}
	return r, nil
}

// lastLine returns the last line of data that is not blank, trimmed.
func lastLine(data []byte) string {
	for len(data) > 0 {
		i := bytes.LastIndexByte(data, '\n')
		line := bytes.TrimSpace(bytes.TrimPrefix(data[i+1:], []byte("\ufeff")))
		if len(line) > 0 {
			return string(line)
		}
		data = data[:max(i, 0)]
	}
	return ""
}

// parseFileLine reads one line of a progress file.
func parseFileLine(line string) (Report, error) {
	switch {
	case strings.HasPrefix(line, "{"):
		return parseFileJSON(line)
	case fileFraction.MatchString(line):
		f := decimal(line)
		if f > 1 && f <= 100 {
			return Report{}, fmt.Errorf("a fraction is at most 1 (write %s%% for a percentage)", line)
		}
		if f > 1 {
			return Report{}, errors.New("a fraction is at most 1")
		}
		return Report{Fraction: f, Format: FormatFile}, nil
	case filePercent.MatchString(line):
		p := decimal(filePercent.FindStringSubmatch(line)[1])
		if p > 100 {
			return Report{}, errors.New("a percentage is at most 100%")
		}
		return Report{Fraction: p / 100, Format: FormatFile}, nil
	case fileCounts.MatchString(line):
		m := fileCounts.FindStringSubmatch(line)
		step, total, ok := readCounts(m[1], m[2])
		if !ok {
			return Report{}, errors.New("the numbers are too large")
		}
		return countsReport(step, total)
	default:
		return Report{}, fmt.Errorf("want one of %s", fileLineForms)
	}
}

// decimal reads a number of the form fileFraction allows, which
// strconv.ParseFloat always reads; one too large for a float64 is +Inf.
func decimal(s string) float64 {
	f, _ := strconv.ParseFloat(s, 64)
	return f
}

// fileJSON is the JSON form of a progress file's line.
type fileJSON struct {
	Fraction *float64    `json:"fraction"`
	Step     json.Number `json:"step"`
	Total    json.Number `json:"total"`
}

// parseFileJSON reads a JSON line: a fraction, or a step and a total.
func parseFileJSON(line string) (Report, error) {
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	var v fileJSON
	if err := dec.Decode(&v); err != nil {
		return Report{}, fmt.Errorf("not the JSON of %s: %w", fileLineForms, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Report{}, errors.New("more after the JSON object")
	}
	counts := v.Step != "" || v.Total != ""
	switch {
	case v.Fraction != nil && counts:
		return Report{}, errors.New(`give "fraction", or "step" and "total", not both`)
	case v.Fraction != nil:
		if !validFraction(*v.Fraction) {
			return Report{}, fmt.Errorf("fraction %v is not between 0 and 1", *v.Fraction)
		}
		return Report{Fraction: *v.Fraction, Format: FormatFile}, nil
	case !counts:
		return Report{}, errors.New(`give "fraction", or "step" and "total"`)
	case v.Step == "":
		return Report{}, errors.New(`"total" needs "step"`)
	case v.Total == "":
		return Report{}, errors.New(`"step" needs "total"`)
	}
	step, err := wholeNumber("step", v.Step)
	if err != nil {
		return Report{}, err
	}
	total, err := wholeNumber("total", v.Total)
	if err != nil {
		return Report{}, err
	}
	return countsReport(step, total)
}

// wholeNumber reads the JSON number of the named field as an int64.
func wholeNumber(name string, n json.Number) (int64, error) {
	v, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is %s, not a whole number", name, n)
	}
	return v, nil
}

// countsReport reports step of total.
func countsReport(step, total int64) (Report, error) {
	switch {
	case total <= 0:
		return Report{}, fmt.Errorf("total %d is not positive", total)
	case step < 0:
		return Report{}, fmt.Errorf("step %d is negative", step)
	case step > total:
		return Report{}, fmt.Errorf("step %d is past total %d", step, total)
	}
	return Report{
		Fraction: float64(step) / float64(total),
		Step:     step,
		Total:    total,
		Format:   FormatFile,
	}, nil
}

// clip shortens a line quoted in an error to its first 80 bytes, at a
// character boundary.
func clip(line string) string {
	const most = 80
	if len(line) <= most {
		return line
	}
	cut := most
	for cut > 0 && !utf8.RuneStart(line[cut]) {
		cut--
	}
	return line[:cut] + "…"
}
