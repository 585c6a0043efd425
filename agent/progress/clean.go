package progress

import "strings"

// esc begins an escape sequence.
const esc = 0x1b

// clean returns the text a terminal shows for one line: escape sequences
// (colours, cursor movement, window titles) and other control characters
// removed, surrounding space trimmed. Keras's backspaces are dropped, not
// applied: they precede the '\r' that starts the next redraw.
func clean[T ~string | ~[]byte](s T) string {
	if !hasControl(s) {
		return strings.TrimSpace(string(s))
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == esc:
			i = skipEscape(s, i)
		case c == '\t':
			b = append(b, ' ')
			i++
		case c < 0x20 || c == 0x7f:
			i++
		default:
			b = append(b, c)
			i++
		}
	}
	return strings.TrimSpace(string(b))
}

// hasControl reports whether s holds a control character.
func hasControl[T ~string | ~[]byte](s T) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return true
		}
	}
	return false
}

// skipEscape returns the index just past the escape sequence that starts
// at s[i] (an ESC), following ECMA-48: a control sequence ("ESC [ 32 m"), a
// control string ("ESC ] … BEL", ended by BEL or "ESC \"), or ESC, any
// intermediate bytes and a final byte ("ESC ( B"). A sequence cut short by
// the end of the line ends there; an invalid byte ends it and is kept.
func skipEscape[T ~string | ~[]byte](s T, i int) int {
	j := i + 1
	if j == len(s) {
		return j
	}
	switch s[j] {
	case '[':
		j++
		for j < len(s) && s[j] >= 0x30 && s[j] <= 0x3f { // parameters
			j++
		}
		for j < len(s) && s[j] >= 0x20 && s[j] <= 0x2f { // intermediates
			j++
		}
		if j < len(s) && s[j] >= 0x40 && s[j] <= 0x7e { // final
			j++
		}
		return j
	case ']', 'P', 'X', '^', '_':
		for j++; j < len(s); j++ {
			if s[j] == 0x07 {
				return j + 1
			}
			if s[j] == esc && j+1 < len(s) && s[j+1] == '\\' {
				return j + 2
			}
		}
		return j
	}
	for j < len(s) && s[j] >= 0x20 && s[j] <= 0x2f {
		j++
	}
	if j < len(s) && s[j] >= 0x30 && s[j] <= 0x7e {
		j++
	}
	return j
}
