package core_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/core/coretest"
)

func TestParseReservationID(t *testing.T) {
	tests := []struct {
		in   string
		want int64 // 0: an error
	}{
		{"r42", 42},
		{"R42", 42},
		{"42", 42},
		{" r7 ", 7},
		{"r007", 7},
		{"r9223372036854775807", 9223372036854775807},
		{"", 0},
		{"r", 0},
		{"r0", 0},
		{"r-1", 0},
		{"-1", 0},
		{"r+5", 0},
		{"+5", 0},
		{"rr42", 0},
		{"rR42", 0},
		{"Rr42", 0},
		{"r 42", 0},
		{"r42x", 0},
		{"r9223372036854775808", 0},
		{"x42", 0},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := core.ParseReservationID(tt.in)
			if tt.want == 0 {
				if core.ErrorCode(err) != core.CodeInvalid {
					t.Errorf("ParseReservationID(%q) = %d, %v; want an invalid error", tt.in, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ParseReservationID(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
			}
		})
	}
}

var reservationIDShape = regexp.MustCompile(`^[rR]?[0-9]+$`)

func FuzzParseReservationID(f *testing.F) {
	for _, s := range []string{"r42", "R42", "42", " r1 ", "r0", "r-1", "rR42", "r+5", "r9223372036854775808"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := core.ParseReservationID(s)
		if err != nil {
			if core.ErrorCode(err) != core.CodeInvalid {
				t.Errorf("ParseReservationID(%q) error code = %q, want invalid", s, core.ErrorCode(err))
			}
			return
		}
		if id <= 0 {
			t.Errorf("ParseReservationID(%q) = %d, want a positive ID", s, id)
		}
		if !reservationIDShape.MatchString(strings.TrimSpace(s)) {
			t.Errorf("ParseReservationID(%q) = %d, but it is not shaped like r42", s, id)
		}
		if again, err := core.ParseReservationID(core.ReservationName(id)); err != nil || again != id {
			t.Errorf("ReservationName(%d) = %q re-parses to %d, %v", id, core.ReservationName(id), again, err)
		}
	})
}

func TestReservationStateAt(t *testing.T) {
	start := coretest.Epoch
	r := core.Reservation{Start: start, End: start.Add(time.Hour), State: core.Confirmed}
	tests := []struct {
		name  string
		state core.ReservationState
		at    time.Time
		want  core.ReservationState
	}{
		{"before", core.Confirmed, start.Add(-time.Second), core.Confirmed},
		{"at start", core.Confirmed, start, core.Active},
		{"last second", core.Confirmed, start.Add(time.Hour - time.Second), core.Active},
		{"at end", core.Confirmed, start.Add(time.Hour), core.Completed},
		{"cancelled stays", core.Cancelled, start.Add(time.Minute), core.Cancelled},
		{"released stays", core.Released, start.Add(2 * time.Hour), core.Released},
		{"no show stays", core.NoShow, start.Add(2 * time.Hour), core.NoShow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := r
			r.State = tt.state
			if got := r.StateAt(tt.at); got != tt.want {
				t.Errorf("StateAt(%s) = %s, want %s", tt.at, got, tt.want)
			}
		})
	}
}
