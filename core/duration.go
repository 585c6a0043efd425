package core

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

var durationPart = regexp.MustCompile(`^(\d{1,6})(w|d|h|m|s)`)

// ParseDuration reads a duration the way people type it: "1h", "90m",
// "2d", "1h30m", "1w", or anything time.ParseDuration accepts. Days are 24
// hours. It refuses negative, zero and absurd (over ten years) durations.
func ParseDuration(s string) (time.Duration, error) {
	t := strings.ToLower(strings.ReplaceAll(strings.TrimSpace(s), " ", ""))
	bad := Errorf(CodeInvalid, "%q is not a duration; write it like 1h, 90m, 2d or 1h30m", s)
	if t == "" {
		return 0, bad
	}
	if d, err := time.ParseDuration(t); err == nil {
		return checkDuration(d, bad)
	}
	var total time.Duration
	for rest := t; rest != ""; {
		m := durationPart.FindStringSubmatch(rest)
		if m == nil {
			return 0, bad
		}
		n, _ := strconv.ParseInt(m[1], 10, 64) // at most 6 digits: cannot fail
		unit := map[string]time.Duration{"w": 7 * 24 * time.Hour, "d": 24 * time.Hour, "h": time.Hour, "m": time.Minute, "s": time.Second}[m[2]]
		total += time.Duration(n) * unit
		rest = rest[len(m[0]):]
		if total > maxDuration {
			return 0, bad
		}
	}
	return checkDuration(total, bad)
}

// maxDuration bounds parsed durations so that arithmetic on them never overflows.
const maxDuration = 10 * 365 * 24 * time.Hour

func checkDuration(d time.Duration, bad error) (time.Duration, error) {
	if d <= 0 || d > maxDuration {
		return 0, bad
	}
	return d, nil
}
