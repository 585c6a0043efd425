package main

import (
	"testing"
	"time"
)

func TestParseWhen(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no tzdata:", err)
	}
	now := time.Date(2026, 12, 2, 10, 30, 15, 0, berlin) // a Wednesday
	at := func(d, h, m int) time.Time { return time.Date(2026, 12, d, h, m, 0, 0, berlin) }
	tests := []struct {
		in   string
		want time.Time
	}{
		{"2026-12-03T09:00:00Z", time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)},
		{"2026-12-03 09:00", at(3, 9, 0)},
		{"2026-12-03T09:00", at(3, 9, 0)},
		{"2026-12-03", at(3, 0, 0)},
		{"today 14:00", at(2, 14, 0)},
		{"tomorrow 9:00", at(3, 9, 0)},
		{"Tomorrow 9am", at(3, 9, 0)},
		{"tomorrow 12pm", at(3, 12, 0)},
		{"tomorrow 12am", at(3, 0, 0)},
		{"tomorrow 9:30 pm", at(3, 21, 30)},
		{"tomorrow", at(3, 0, 0)},
		{"today", at(2, 0, 0)},
		{"14:30", at(2, 14, 30)},
		{"friday 10:00", at(4, 10, 0)},
		{"fri 10:00", at(4, 10, 0)},
		{"wednesday", at(2, 0, 0)},
		{"monday 8:00", at(7, 8, 0)},
		{"now", now.Truncate(time.Second)},
		{"+2h", now.Add(2 * time.Hour)},
		{"+1d", now.Add(24 * time.Hour)},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseWhen(tt.in, now, berlin)
			if err != nil {
				t.Fatalf("parseWhen(%q): %v", tt.in, err)
			}
			if !got.Equal(tt.want) {
				t.Errorf("parseWhen(%q) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseWhenRefuses(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	for _, in := range []string{"", "soon", "tomorrow 25:00", "tomorrow 9:61", "13pm", "0am", "+", "+-2h", "+banana", "2026-13-01", "2026-02-30 10:00", "yesterday 9:00", "fr 10:00", "friday 10:00 extra", "9::00"} {
		t.Run(in, func(t *testing.T) {
			if got, err := parseWhen(in, now, time.UTC); err == nil {
				t.Errorf("parseWhen(%q) = %s, want an error", in, got)
			}
		})
	}
}

func TestParseEnd(t *testing.T) {
	start := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	got, err := parseEnd("+4h", start, now, time.UTC)
	if err != nil || !got.Equal(start.Add(4*time.Hour)) {
		t.Errorf("parseEnd(+4h) = %s, %v; want %s", got, err, start.Add(4*time.Hour))
	}
	got, err = parseEnd("2026-12-03 13:00", start, now, time.UTC)
	if err != nil || !got.Equal(time.Date(2026, 12, 3, 13, 0, 0, 0, time.UTC)) {
		t.Errorf("parseEnd(2026-12-03 13:00) = %s, %v", got, err)
	}
	if _, err := parseEnd("+x", start, now, time.UTC); err == nil {
		t.Error("parseEnd(+x): want an error")
	}
}

func FuzzParseWhen(f *testing.F) {
	for _, s := range []string{"2026-12-03 09:00", "tomorrow 9am", "+2h", "friday 10:00", "14:30", "now", "2026-12-03T09:00:00Z", "mon", "12:00pm"} {
		f.Add(s)
	}
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseWhen(s, now, time.UTC)
		if err != nil {
			return
		}
		if got.IsZero() {
			t.Fatalf("parseWhen(%q) returned the zero time without an error", s)
		}
	})
}
