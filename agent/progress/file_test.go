package progress

import (
	"errors"
	"strings"
	"testing"
)

func TestParseFile(t *testing.T) {
	tests := []struct {
		name string
		data string
		want Report
	}{
		{"json fraction", `{"fraction":0.42}`, Report{Fraction: 0.42, Format: FormatFile}},
		{"json counts", `{"step":120,"total":1000}`, Report{Fraction: 0.12, Step: 120, Total: 1000, Format: FormatFile}},
		{"json with spaces", ` { "total": 1000, "step": 1000 } `, Report{Fraction: 1, Step: 1000, Total: 1000, Format: FormatFile}},
		{"json fraction 0", `{"fraction":0}`, Report{Fraction: 0, Format: FormatFile}},
		{"json fraction 1", `{"fraction":1.0}`, Report{Fraction: 1, Format: FormatFile}},
		{"json exponent", `{"fraction":4.2e-1}`, Report{Fraction: 0.42, Format: FormatFile}},
		{"fraction", "0.42\n", Report{Fraction: 0.42, Format: FormatFile}},
		{"fraction without a leading 0", ".5", Report{Fraction: 0.5, Format: FormatFile}},
		{"fraction 1", "1", Report{Fraction: 1, Format: FormatFile}},
		{"percentage", "42%", Report{Fraction: 0.42, Format: FormatFile}},
		{"percentage with decimals", "42.5 %\n", Report{Fraction: 0.425, Format: FormatFile}},
		{"counts", "120/1000", Report{Fraction: 0.12, Step: 120, Total: 1000, Format: FormatFile}},
		{"counts with spaces", "120 / 1000", Report{Fraction: 0.12, Step: 120, Total: 1000, Format: FormatFile}},
		{"the last line counts", "0.1\n0.2\n{\"fraction\":0.3}\n", Report{Fraction: 0.3, Format: FormatFile}},
		{"blank lines after it", "0.1\n0.42\n\n  \r\n", Report{Fraction: 0.42, Format: FormatFile}},
		{"windows line ends", "0.1\r\n0.42\r\n", Report{Fraction: 0.42, Format: FormatFile}},
		{"byte order mark", "\ufeff0.42", Report{Fraction: 0.42, Format: FormatFile}},
		{"an earlier bad line does not count", "oops\n0.42\n", Report{Fraction: 0.42, Format: FormatFile}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseFile([]byte(tt.data))
			if err != nil {
				t.Fatalf("ParseFile(%q): %v", tt.data, err)
			}
			if d := diffReport(got, tt.want); d != "" {
				t.Errorf("ParseFile(%q):\n%s", tt.data, d)
			}
		})
	}
}

func TestParseFileErrors(t *testing.T) {
	tests := []struct {
		name string
		data string
		want string // in the error
	}{
		{"words", "almost done", `line "almost done": want one of {"fraction":0.42}`},
		{"fraction above 1", "1.5", `line "1.5": a fraction is at most 1`},
		{"a percentage without its sign", "42", `write 42% for a percentage`},
		{"negative fraction", "-0.1", `line "-0.1": want one of`},
		{"huge fraction", "1" + strings.Repeat("0", 400), "a fraction is at most 1"},
		{"percentage above 100", "120%", "at most 100%"},
		{"huge percentage", "1" + strings.Repeat("0", 400) + "%", "at most 100%"},
		{"step past total", "1200/1000", "step 1200 is past total 1000"},
		{"zero total", "0/0", "total 0 is not positive"},
		{"huge counts", "1/99999999999999999999", "too large"},
		{"hexadecimal", "0x1p-2", "want one of"},
		{"infinity", "Inf", "want one of"},
		{"not a number", "NaN", "want one of"},
		{"json fraction above 1", `{"fraction":1.5}`, "fraction 1.5 is not between 0 and 1"},
		{"json negative fraction", `{"fraction":-0.5}`, "not between 0 and 1"},
		{"json unknown field", `{"fraction":0.4,"eta":"5m"}`, `unknown field "eta"`},
		{"json both", `{"fraction":0.4,"step":4,"total":10}`, "not both"},
		{"json step alone", `{"step":4}`, `"step" needs "total"`},
		{"json total alone", `{"total":4}`, `"total" needs "step"`},
		{"json nothing", `{}`, `give "fraction", or "step" and "total"`},
		{"json fractional step", `{"step":1.5,"total":10}`, `"step" is 1.5, not a whole number`},
		{"json negative step", `{"step":-1,"total":10}`, "step -1 is negative"},
		{"json string fraction", `{"fraction":"0.4"}`, "not the JSON of"},
		{"json cut short", `{"fraction":0.4`, "not the JSON of"},
		{"json and more", `{"fraction":0.4} 0.5`, "more after the JSON object"},
		{"a long line is quoted short", strings.Repeat("é", 100), "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseFile([]byte(tt.data))
			if err == nil {
				t.Fatalf("ParseFile(%q) = %+v, want an error", tt.data, got)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "progress file: line ") {
				t.Errorf("ParseFile(%q) error %q, want one naming the line and saying %q", tt.data, err, tt.want)
			}
			if errors.Is(err, ErrNoProgress) {
				t.Errorf("ParseFile(%q) error is ErrNoProgress; that is for a file with no line yet", tt.data)
			}
		})
	}
}

func TestParseFileEmpty(t *testing.T) {
	for _, data := range []string{"", "\n", "  \n\r\n\t", "\ufeff"} {
		if _, err := ParseFile([]byte(data)); !errors.Is(err, ErrNoProgress) {
			t.Errorf("ParseFile(%q) error %v, want ErrNoProgress", data, err)
		}
	}
}
