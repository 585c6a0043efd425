package progress

import "strings"

// ParseLine reads one line of a job's output and reports the progress it
// shows, if it shows any. The line may hold colours and other escape
// sequences; when it holds '\r' (a bar redrawn in place), the text after
// the last one is read, as a terminal shows it.
//
// ParseLine knows nothing of the lines before: a Keras step line has no
// epoch, an "Epoch 3/10" that a script prints is read as counted from 1,
// and a validation bar is reported like any other. Parser reads a stream
// with that context.
func ParseLine(line string) (Report, bool) {
	line = strings.TrimRight(line, "\r\n")
	if i := strings.LastIndexAny(line, "\r\n"); i >= 0 {
		line = line[i+1:]
	}
	rd, ok := parse(clean(line))
	if !ok {
		return Report{}, false
	}
	return rd.report(false)
}

// parse reads a clean line with each recogniser in turn. Every progress
// line has a slash (in "n/total", "Epoch 3/10" or the speed), which most
// other lines lack.
func parse(s string) (reading, bool) {
	if !strings.Contains(s, "/") {
		return reading{}, false
	}
	if rd, ok := readTqdm(s); ok {
		return rd, true
	}
	if rd, ok := readKeras(s); ok {
		return rd, true
	}
	if rd, ok := readRich(s); ok {
		return rd, true
	}
	return readHeader(s)
}
