package bot

import (
	"testing"
	"time"
)

func TestWindow(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip(err)
	}
	now := time.Date(2026, 10, 20, 12, 0, 0, 0, berlin)
	tests := []struct {
		lang       string
		start, end time.Time
		want       string
	}{
		{"en", time.Date(2026, 10, 21, 9, 0, 0, 0, berlin), time.Date(2026, 10, 21, 13, 0, 0, 0, berlin), "Wed 21 Oct 09:00–13:00"},
		{"zh", time.Date(2026, 10, 21, 9, 0, 0, 0, berlin), time.Date(2026, 10, 21, 13, 0, 0, 0, berlin), "10月21日周三 09:00–13:00"},
		{"en", time.Date(2026, 10, 21, 22, 0, 0, 0, berlin), time.Date(2026, 10, 22, 2, 0, 0, 0, berlin), "Wed 21 Oct 22:00 – Thu 22 Oct 02:00"},
		{"en", time.Date(2027, 1, 4, 9, 0, 0, 0, berlin), time.Date(2027, 1, 4, 10, 0, 0, 0, berlin), "Mon 4 Jan 2027 09:00–10:00"},
		// Clocks go back at 03:00 CEST on 25 Oct 2026: one hour from 02:30 CEST ends at 02:30 CET.
		{"en", time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC), time.Date(2026, 10, 25, 1, 30, 0, 0, time.UTC), "Sun 25 Oct 02:30 CEST – Sun 25 Oct 02:30 CET"},
	}
	for _, tt := range tests {
		if got := window(tt.lang, tt.start, tt.end, now, berlin); got != tt.want {
			t.Errorf("window(%s, %v, %v) = %q, want %q", tt.lang, tt.start, tt.end, got, tt.want)
		}
	}
}

func TestPlacementAndSpan(t *testing.T) {
	if got := indexList([]int{0, 1, 2, 3, 5, 7, 8}); got != "0–3, 5, 7–8" {
		t.Errorf("indexList = %q", got)
	}
	for d, want := range map[time.Duration]string{20 * time.Second: "<1m", 90 * time.Minute: "1h 30m", 50 * time.Hour: "2d 2h", 3 * time.Hour: "3h"} {
		if got := span(d); got != want {
			t.Errorf("span(%v) = %q, want %q", d, got, want)
		}
	}
}
