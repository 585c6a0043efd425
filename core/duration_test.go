package core

import (
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"1h", time.Hour, true},
		{"90m", 90 * time.Minute, true},
		{"1h30m", 90 * time.Minute, true},
		{"2d", 48 * time.Hour, true},
		{"1d12h", 36 * time.Hour, true},
		{"1w", 7 * 24 * time.Hour, true},
		{" 2 H ", 2 * time.Hour, true},
		{"1.5h", 90 * time.Minute, true},
		{"", 0, false},
		{"0h", 0, false},
		{"-1h", 0, false},
		{"h", 0, false},
		{"1x", 0, false},
		{"1h-", 0, false},
		{"999999w", 0, false},
		{"100000000h", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseDuration(tt.in)
			if (err == nil) != tt.ok {
				t.Fatalf("ParseDuration(%q) error = %v, want ok=%t", tt.in, err, tt.ok)
			}
			if got != tt.want {
				t.Errorf("ParseDuration(%q) = %s, want %s", tt.in, got, tt.want)
			}
			if err != nil && ErrorCode(err) != CodeInvalid {
				t.Errorf("error code = %q, want invalid", ErrorCode(err))
			}
		})
	}
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"1h", "90m", "2d", "1h30m", "1w", "-5s", "1e9h", "999999w999999d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			if ErrorCode(err) != CodeInvalid {
				t.Fatalf("ParseDuration(%q): error code %q, want invalid", s, ErrorCode(err))
			}
			return
		}
		if d <= 0 || d > maxDuration {
			t.Fatalf("ParseDuration(%q) = %s, outside (0, %s]", s, d, maxDuration)
		}
	})
}
