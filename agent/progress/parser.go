package progress

import (
	"bytes"
	"sync"
)

// maxLine is the longest line a Parser reads, in bytes. A progress line is
// a few hundred bytes; a longer line is dropped whole, so a job that prints
// megabytes without a newline costs the Parser no more than this.
const maxLine = 64 << 10

// Parser reads a job's output as it is written (the node agent tees the
// job's output into it) and keeps the latest progress it shows.
//
// It ends a line at '\n' and at '\r', since progress bars redraw in place
// by writing '\r' before each new drawing. So a bar's drawing is read when
// the next one begins, or at Flush: Latest lags one redraw behind the
// terminal. Each Write continues the line the last one left open, so a
// Parser reads one stream: stdout and stderr through one pipe (as os/exec
// gives them when Cmd.Stdout and Cmd.Stderr are the same writer), or a
// Parser each.
//
// Unlike ParseLine, a Parser remembers what earlier lines said: the epoch
// header before Keras's step lines, whether the job counts epochs from 0,
// and which bar it follows. When a job draws several bars, it follows one
// until it finishes (step == total), then whichever bar comes next; a bar
// of an evaluation pass ("Validation", "Testing") takes over only if no
// bar has been followed yet. docs/progress.md gives the details.
//
// The zero Parser is ready to use. A Parser is safe for concurrent use.
type Parser struct {
	onReport func(Report)

	mu        sync.Mutex
	line      []byte // the line so far, not yet ended
	overlong  bool   // the line passed maxLine: it is dropped
	zeroBased bool   // the job printed "Epoch 0": it counts epochs from 0
	follow    follow
	latest    Report
	reported  bool // latest holds a report
}

// NewParser returns a Parser that also calls onReport, if not nil, with
// every report it takes, in order. onReport runs inside Write and Flush and
// must not call the Parser.
func NewParser(onReport func(Report)) *Parser {
	return &Parser{onReport: onReport}
}

// Write reads b, which may end anywhere, even inside a line, a UTF-8
// character or an escape sequence: the reports are the same however the
// output is cut into writes. Write always takes all of b and never fails,
// so a Parser can share an io.MultiWriter with the job's log file without
// ever holding it up.
func (p *Parser) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(b)
	for {
		i := bytes.IndexAny(b, "\r\n")
		if i < 0 {
			p.keep(b)
			return n, nil
		}
		p.end(b[:i])
		b = b[i+1:]
	}
}

// Flush reads the line written so far as if it had ended; call it when the
// job's output ends, so that its last drawing counts.
func (p *Parser) Flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.end(nil)
}

// Latest returns the latest report taken; ok is false before the first.
func (p *Parser) Latest() (r Report, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.latest, p.reported
}

// keep adds b to the line so far, or drops the line once it passes
// maxLine. The buffer never grows past maxLine.
func (p *Parser) keep(b []byte) {
	if p.overlong || len(b) == 0 {
		return
	}
	need := len(p.line) + len(b)
	if need > maxLine {
		p.line, p.overlong = p.line[:0], true
		return
	}
	if need > cap(p.line) {
		grown := make([]byte, len(p.line), min(max(need, 2*cap(p.line), 256), maxLine))
		copy(grown, p.line)
		p.line = grown
	}
	p.line = append(p.line, b...)
}

// end ends the line so far, whose last part is tail, and reads it.
func (p *Parser) end(tail []byte) {
	line := tail
	if len(p.line) > 0 || p.overlong {
		p.keep(tail)
		line = p.line
	}
	if !p.overlong && len(line) <= maxLine {
		p.read(line)
	}
	p.line, p.overlong = p.line[:0], false
}

// read reads one line. What it shows becomes the latest report if it is
// the bar followed, placed in its epoch by the header before it.
func (p *Parser) read(line []byte) {
	if bytes.IndexByte(line, '/') < 0 { // every progress line has one; see parse
		return
	}
	rd, ok := parse(clean(line))
	if !ok {
		return
	}
	if rd.epoch.teachesZero() {
		p.zeroBased = true
	}
	if _, ok := rd.report(p.zeroBased); !ok { // numbers that contradict each other change nothing
		return
	}
	if !p.follow.admit(&rd) {
		return
	}
	// A header that was valid stays valid in any later epoch counting, so
	// the epoch admit set cannot make the numbers contradict each other.
	r, _ := rd.report(p.zeroBased)
	p.latest, p.reported = r, true
	if p.onReport != nil {
		p.onReport(r)
	}
}
