package deploy

import (
	"regexp"
	"slices"
	"strings"
)

// keywords are PromQL words that are not metric names where they stand
// alone: set operators, modifiers, the number literals Inf and NaN, and
// the aggregation operators, which a by or without clause may separate
// from their parenthesis (sum by (x) (…)).
var keywords = map[string]bool{
	"and": true, "or": true, "unless": true, "bool": true, "offset": true, "atan2": true,
	"inf": true, "nan": true,
	"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true,
	"count": true, "count_values": true, "bottomk": true, "topk": true, "quantile": true,
	"limitk": true, "limit_ratio": true,
}

// labelLists are the words a parenthesised list of label names follows.
var labelLists = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
}

// MetricNames returns the metric names a PromQL expression selects,
// sorted and without repeats. It reads the expression the way PromQL's
// lexer does, for what a name is: an identifier that is not a function
// or aggregation (followed by "("), a keyword, a label list after by,
// without, on, ignoring or group_left/right, inside a label matcher
// {…}, a range or subquery […], a string or a Grafana variable ($x,
// ${x}). It does not check the syntax: Prometheus does (promtool, and
// TestPrometheusScrapes).
func MetricNames(expr string) []string {
	var names []string
	isIdent := func(c byte, first bool) bool {
		return c == '_' || c == ':' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || !first && '0' <= c && c <= '9'
	}
	// skip returns the index just past the bracket matching the one at i.
	skip := func(i int, open, close byte) int {
		depth := 0
		for ; i < len(expr); i++ {
			switch c := expr[i]; {
			case c == '"' || c == '\'' || c == '`':
				i = skipString(expr, i) - 1
			case c == open:
				depth++
			case c == close:
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return i
	}
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			i = skipString(expr, i)
		case c == '#': // a comment runs to the end of the line
			for i < len(expr) && expr[i] != '\n' {
				i++
			}
		case c == '{':
			i = skip(i, '{', '}')
		case c == '[':
			i = skip(i, '[', ']')
		case c == '$':
			i++
			if i < len(expr) && expr[i] == '{' {
				i = skip(i, '{', '}')
			}
			for i < len(expr) && isIdent(expr[i], false) {
				i++
			}
		case '0' <= c && c <= '9' || c == '.':
			// A number or a duration (1e3, 0x1F, 5m, 1h30m).
			for i < len(expr) && (isIdent(expr[i], false) || expr[i] == '.') {
				if (expr[i] == 'e' || expr[i] == 'E') && i+1 < len(expr) && (expr[i+1] == '+' || expr[i+1] == '-') {
					i++
				}
				i++
			}
		case isIdent(c, true):
			start := i
			for i < len(expr) && isIdent(expr[i], false) {
				i++
			}
			word := expr[start:i]
			next := i
			for next < len(expr) && strings.ContainsRune(" \t\r\n", rune(expr[next])) {
				next++
			}
			followedByParen := next < len(expr) && expr[next] == '('
			switch {
			case labelLists[strings.ToLower(word)] && followedByParen:
				i = skip(next, '(', ')')
			case followedByParen, keywords[strings.ToLower(word)]:
			default:
				names = append(names, word)
			}
		default:
			i++
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// skipString returns the index just past the string literal starting at i.
func skipString(s string, i int) int {
	quote := s[i]
	for i++; i < len(s); i++ {
		if s[i] == '\\' && quote != '`' {
			i++
			continue
		}
		if s[i] == quote {
			return i + 1
		}
	}
	return i
}

var (
	grafanaDurations = regexp.MustCompile(`\$(__rate_interval|__interval|__range)\b|\$\{(__rate_interval|__interval|__range)\}`)
	grafanaVariables = regexp.MustCompile(`\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*`)
)

// Expand replaces Grafana's variables in a dashboard's query so that
// Prometheus can evaluate it: the interval and range variables by 5m, the
// dashboard's own variables (used in regex matchers, =~"$node") by ".*".
func Expand(expr string) string {
	expr = grafanaDurations.ReplaceAllString(expr, "5m")
	return grafanaVariables.ReplaceAllString(expr, ".*")
}
