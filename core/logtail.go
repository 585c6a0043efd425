package core

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// The end of a failed job's log that its owner's notice shows.
const (
	tailBytes    = 4096 // read at most this much from the end
	tailLines    = 10   // show at most this many lines
	tailLineRune = 160  // and clip each at this many characters
)

// LogWait is how long a failed job's notice waits for the rest of its log:
// the agent reports the exit at once and ships the log's end a moment
// later, and the notice shows the log's last lines. A notice is told
// without them once this has passed.
const LogWait = 30 * time.Second

// logComplete reports whether the server has all of job's log (its parts
// have ended and its first node's agent said so), for holding back its
// failure notice until the last lines are in.
func logComplete(ctx context.Context, tx Tx, job int64) (bool, error) {
	j, err := tx.Job(ctx, job)
	if ErrorCode(err) == CodeNotFound {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	_, size, err := tx.Log(ctx, job, 0, 0)
	if err != nil {
		return false, err
	}
	return logsShipped(j, size), nil
}

// failureNotice says whether e is the notice of a job that failed, which
// carries the end of the job's log.
func failureNotice(e Event) bool {
	return e.Kind == EventFinished && e.Job != 0 && e.Data[DataState] == string(JobFailed)
}

// logTail returns the last lines of job's log as the server keeps it,
// cleaned for a chat message (see cleanTail); "" when the server kept none
// of its end (a log past the size limit keeps only its start).
func logTail(ctx context.Context, tx Tx, job int64) (string, error) {
	_, size, err := tx.Log(ctx, job, 0, 0)
	if err != nil || size == 0 {
		return "", err
	}
	from := max(size-tailBytes, 0)
	chunks, _, err := tx.Log(ctx, job, from, size-from)
	if err != nil {
		return "", err
	}
	var data []byte
	at := from
	for _, c := range chunks {
		if c.Offset > at || c.Offset+c.N <= at {
			continue
		}
		skip := at - c.Offset
		if int64(len(c.Data)) < c.N { // not kept past the limit: the end is not here
			return "", nil
		}
		data = append(data, c.Data[skip:]...)
		at = c.Offset + c.N
	}
	if at < size {
		return "", nil
	}
	if from > 0 { // the first line read is likely a part of one
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	return cleanTail(data, tailLines), nil
}

// escapes matches terminal escape sequences: CSI (colours, cursor moves)
// and OSC (titles, links).
var escapes = regexp.MustCompile(`\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]`)

// cleanTail keeps the last n non-blank lines of a log: a line redrawn with
// carriage returns (a progress bar) shows its last state, escape sequences
// and other control characters go (tabs become spaces), invalid UTF-8 is
// replaced and long lines are clipped.
func cleanTail(data []byte, n int) string {
	text := escapes.ReplaceAllString(strings.ToValidUTF8(string(data), "\uFFFD"), "")
	var out []string
	for line := range strings.SplitSeq(text, "\n") {
		parts := strings.Split(line, "\r")
		line = ""
		for i := len(parts) - 1; i >= 0; i-- {
			if strings.TrimSpace(parts[i]) != "" {
				line = parts[i]
				break
			}
		}
		line = strings.TrimRightFunc(strings.Map(func(r rune) rune {
			switch {
			case r == '\t':
				return ' '
			case unicode.IsControl(r):
				return -1
			}
			return r
		}, line), unicode.IsSpace)
		if line == "" {
			continue
		}
		if utf8.RuneCountInString(line) > tailLineRune {
			line = string([]rune(line)[:tailLineRune-1]) + "…"
		}
		out = append(out, line)
		if len(out) > n {
			out = out[1:]
		}
	}
	return strings.Join(out, "\n")
}
