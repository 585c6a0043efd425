package bot

import (
	"strconv"
	"strings"
)

// zhDigits are the Chinese digits people type; 两 is the "two" of counts
// ("两张", "两个小时").
var zhDigits = map[rune]int{'零': 0, '〇': 0, '一': 1, '二': 2, '两': 2, '三': 3, '四': 4, '五': 5, '六': 6, '七': 7, '八': 8, '九': 9}

// enNumbers are the English number words counts and lengths use.
var enNumbers = map[string]int{
	"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
	"seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "sixteen": 16,
}

// zhNumberPattern matches a Chinese number below ten thousand ("八", "十二",
// "三十二", "一百二十八", "两千零四十八"), or the empty string (callers
// skip that). It is strict so that "周一两张卡" reads 两, not 一两.
const zhNumberPattern = `(?:[一二两三四五六七八九]千)?零?(?:[一二两三四五六七八九]百)?零?(?:[一二两三四五六七八九]?十)?[一二两三四五六七八九]?`

// number reads a count written in ASCII digits, an English word or Chinese
// numerals; it returns -1 when s is none of these or is 10000 or more.
func number(s string) int {
	s = strings.TrimSpace(s)
	if s == "" {
		return -1
	}
	if n, ok := enNumbers[s]; ok {
		return n
	}
	if s[0] >= '0' && s[0] <= '9' {
		if len(s) > 5 {
			return -1
		}
		n, err := strconv.Atoi(s)
		if err != nil || n >= 10000 {
			return -1
		}
		return n
	}
	return zhNumber(s)
}

// zhNumber reads Chinese numerals below 10000, or returns -1.
func zhNumber(s string) int {
	units := map[rune]int{'十': 10, '百': 100, '千': 1000}
	total, digit, seen := 0, -1, false
	last := 10000
	for _, r := range s {
		if d, ok := zhDigits[r]; ok {
			if digit > 0 {
				return -1 // two digits in a row ("一二")
			}
			digit, seen = d, true
			continue
		}
		u, ok := units[r]
		if !ok || u >= last {
			return -1
		}
		if digit < 0 {
			if u != 10 || total != 0 {
				return -1
			}
			digit = 1 // "十二": a leading 十 is one ten
		}
		total += digit * u
		digit, last, seen = -1, u, true
	}
	if !seen {
		return -1
	}
	if digit > 0 {
		total += digit
	}
	return total
}
