package bot

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Lengths people type: "3h", "90m", "1h30m", "1.5 hours", "2 days", "an
// hour", "half an hour", "3小时", "90分钟", "一个半小时", "半小时", "两天".
// "for 3h" and "跑12小时" are lengths too; "in 2 hours", "2小时后" and
// "2 hours from now" name a start relative to now instead.
var (
	enLength = regexp.MustCompile(`(?:\b(for|in|by)\s+)?\b((?:\d{1,4}(?:\.\d{1,2})?\s*(?:hours?|hrs?|h|minutes?|mins?|m|days?|d|weeks?|wks?|w)\s*)+)\b(\s*from now|\s*later)?`)
	enWords  = regexp.MustCompile(`(?:\b(for|in|by)\s+)?\b(an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|half an?|an? half|one and a half)\s+(hours?|days?|weeks?|minutes?)\b(?:\s+(from now|later))?`)
	enPart   = regexp.MustCompile(`(\d{1,4}(?:\.\d{1,2})?)\s*([a-z]+)`)
	zhLength = regexp.MustCompile(`(?:(跑|用|持续|共|一共)\s*)?(\d{1,4}(?:\.\d{1,2})?|` + zhNumberPattern + `)?\s*(个)?\s*(半)?\s*(?:个)?\s*(小时|钟头|分钟|天)\s*(后|之后|以后)?`)
)

// lengthRead is one length found in the text.
type lengthRead struct {
	d      time.Duration
	offset bool // "in 2 hours", "2小时后": a start, not a length
	text   string
}

// maxLength bounds lengths and offsets (core refuses longer bookings anyway).
const maxLength = 366 * 24 * time.Hour

var enUnits = map[string]time.Duration{
	"h": time.Hour, "hr": time.Hour, "hrs": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"m": time.Minute, "min": time.Minute, "mins": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
	"w": 7 * 24 * time.Hour, "wk": 7 * 24 * time.Hour, "wks": 7 * 24 * time.Hour, "week": 7 * 24 * time.Hour, "weeks": 7 * 24 * time.Hour,
}

var zhUnits = map[string]time.Duration{"小时": time.Hour, "钟头": time.Hour, "分钟": time.Minute, "天": 24 * time.Hour}

// readLengths finds every length in s and blanks it. A length of zero or
// beyond maxLength comes back with d = 0 so that the caller can refuse it.
func readLengths(s *string) []lengthRead {
	var out []lengthRead
	take(s, enLength, func(g []string) bool {
		var total float64
		for _, part := range enPart.FindAllStringSubmatch(g[2], -1) {
			v, _ := strconv.ParseFloat(part[1], 64)
			total += v * float64(enUnits[part[2]])
		}
		out = append(out, lengthRead{d: clampLength(total), offset: g[1] == "in" || g[3] != "", text: strings.TrimSpace(g[0])})
		return true
	})
	take(s, enWords, func(g []string) bool {
		n := float64(number(g[2]))
		switch g[2] {
		case "half a", "half an":
			n = 0.5
		case "a half", "an half":
			return false
		case "one and a half":
			n = 1.5
		}
		unit := enUnits[g[3]]
		out = append(out, lengthRead{d: clampLength(n * float64(unit)), offset: g[1] == "in" || g[4] != "", text: strings.TrimSpace(g[0])})
		return true
	})
	take(s, zhLength, func(g []string) bool {
		n := 0.0
		switch {
		case g[2] == "" && g[4] == "":
			return false // "小时" alone
		case g[2] == "":
		case g[2][0] >= '0' && g[2][0] <= '9':
			n, _ = strconv.ParseFloat(g[2], 64)
		default:
			v := zhNumber(g[2])
			if v < 0 {
				return false
			}
			n = float64(v)
		}
		if g[4] != "" {
			n += 0.5
		}
		out = append(out, lengthRead{d: clampLength(n * float64(zhUnits[g[5]])), offset: g[6] != "", text: strings.TrimSpace(g[0])})
		return true
	})
	return out
}

func clampLength(ns float64) time.Duration {
	if ns < float64(time.Minute) || ns > float64(maxLength) {
		return 0
	}
	return time.Duration(ns).Round(time.Minute)
}

// take calls f with the submatches of each match of re in *s, left to
// right, and blanks the matches f accepts (same byte length, so offsets
// into *s stay valid).
func take(s *string, re *regexp.Regexp, f func(g []string) bool) {
	locs := re.FindAllStringSubmatchIndex(*s, -1)
	b := []byte(*s)
	for _, loc := range locs {
		if loc[1] == loc[0] {
			continue
		}
		g := make([]string, len(loc)/2)
		for i := range g {
			if loc[2*i] >= 0 {
				g[i] = (*s)[loc[2*i]:loc[2*i+1]]
			}
		}
		if f(g) {
			for i := loc[0]; i < loc[1]; i++ {
				b[i] = ' '
			}
		}
	}
	*s = string(b)
}
