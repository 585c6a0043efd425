package core

import (
	"strings"
	"testing"
	"time"
)

func TestPolicyCheckWindow(t *testing.T) {
	now := time.Date(2030, time.January, 7, 9, 0, 0, 0, time.UTC)
	p := DefaultPolicy
	tests := []struct {
		name       string
		start, end time.Time
		wantErr    string // a fragment of the message; "" for valid
	}{
		{"one hour tomorrow", now.Add(24 * time.Hour), now.Add(25 * time.Hour), ""},
		{"starts now", now, now.Add(time.Hour), ""},
		{"in the past within grace", now.Add(-p.PastGrace), now.Add(time.Hour), ""},
		{"shortest", now, now.Add(p.MinDuration), ""},
		{"longest", now, now.Add(p.MaxDuration), ""},
		{"ends at the horizon", now.Add(p.Horizon - time.Hour), now.Add(p.Horizon), ""},
		{"no start", time.Time{}, now.Add(time.Hour), "needs a start and an end"},
		{"no end", now, time.Time{}, "needs a start and an end"},
		{"end before start", now.Add(2 * time.Hour), now.Add(time.Hour), "must be after the start"},
		{"zero length", now.Add(time.Hour), now.Add(time.Hour), "must be after the start"},
		{"past beyond grace", now.Add(-p.PastGrace - time.Second), now.Add(time.Hour), "in the past"},
		{"yesterday", now.Add(-24 * time.Hour), now.Add(-23 * time.Hour), "in the past"},
		{"too short", now, now.Add(p.MinDuration - time.Second), "at least 5m"},
		{"too long", now, now.Add(p.MaxDuration + time.Second), "at most 14 days"},
		{"beyond horizon", now.Add(p.Horizon), now.Add(p.Horizon + time.Hour), "at most 180 days ahead"},
		{"year 9999", time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 1, 0, 0, 0, time.UTC), "ahead"},
		{"now to year 9999", now, time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC), "at most 14 days"},
		{"year 1", time.Date(1, 1, 1, 9, 0, 0, 0, time.UTC), time.Date(1, 1, 1, 10, 0, 0, 0, time.UTC), "in the past"},
		{"year 1 to now", time.Date(1, 1, 2, 0, 0, 0, 0, time.UTC), now.Add(time.Hour), "in the past"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := p.checkWindow(tt.start, tt.end, now)
			checkErr(t, err, CodeInvalid, tt.wantErr)
		})
	}
}

func TestPolicyCheckExtension(t *testing.T) {
	now := time.Date(2030, time.January, 7, 9, 0, 0, 0, time.UTC)
	p := DefaultPolicy
	tests := []struct {
		name       string
		start, end time.Time
		wantErr    string
	}{
		{"within limits", now, now.Add(p.MaxDuration), ""},
		{"too long", now, now.Add(p.MaxDuration + time.Second), "extended, this one would last"},
		{"beyond horizon", now.Add(p.Horizon - time.Hour), now.Add(p.Horizon + time.Hour), "ahead"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErr(t, p.checkExtension(tt.start, tt.end, now), CodeInvalid, tt.wantErr)
		})
	}
}

func TestPolicyCheckNote(t *testing.T) {
	p := DefaultPolicy
	tests := []struct {
		name    string
		note    string
		wantErr string
	}{
		{"empty", "", ""},
		{"plain", "llama finetune", ""},
		{"longest in runes", strings.Repeat("預", p.MaxNote), ""},
		{"too long", strings.Repeat("x", p.MaxNote+1), "at most 500"},
		{"invalid utf-8", "ok\xff\xfe", "not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErr(t, p.checkNote(tt.note), CodeInvalid, tt.wantErr)
		})
	}
}

func TestFmtDuration(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{24 * time.Hour, "1 day"},
		{14 * 24 * time.Hour, "14 days"},
		{25 * time.Hour, "25h"},
		{90 * time.Minute, "90m"},
		{90 * time.Second, "1m30s"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := fmtDuration(tt.d); got != tt.want {
				t.Errorf("fmtDuration(%s) = %q, want %q", tt.d, got, tt.want)
			}
		})
	}
}

// checkErr fails t unless err is nil when wantErr is "", or a domain error
// with code whose message contains wantErr.
func checkErr(t *testing.T, err error, code Code, wantErr string) {
	t.Helper()
	if wantErr == "" {
		if err != nil {
			t.Fatalf("err = %v, want nil", err)
		}
		return
	}
	if got := ErrorCode(err); got != code {
		t.Fatalf("err code = %q (%v), want %q", got, err, code)
	}
	if !strings.Contains(err.Error(), wantErr) {
		t.Errorf("err = %q, want it to mention %q", err, wantErr)
	}
}
