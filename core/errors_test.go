package core_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/core/coretest"
)

func TestErrorCodeAndMessage(t *testing.T) {
	domain := core.Errorf(core.CodeConflict, "r%d is in the way", 4)
	tests := []struct {
		name        string
		err         error
		wantCode    core.Code
		wantMessage string
	}{
		{"nil", nil, "", "internal error"},
		{"domain", domain, core.CodeConflict, "r4 is in the way"},
		{"wrapped domain", fmt.Errorf("booking: %w", domain), core.CodeConflict, "r4 is in the way"},
		{"plain", errors.New("disk on fire at /var/lib/gpucal"), core.CodeInternal, "internal error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := core.ErrorCode(tt.err); got != tt.wantCode {
				t.Errorf("ErrorCode = %q, want %q", got, tt.wantCode)
			}
			if tt.err == nil {
				return
			}
			if got := core.ErrorMessage(tt.err); got != tt.wantMessage {
				t.Errorf("ErrorMessage = %q, want %q", got, tt.wantMessage)
			}
		})
	}
}

func TestWithPolicy(t *testing.T) {
	p := core.DefaultPolicy
	p.MaxDuration = time.Hour
	e := coretest.NewEnv(core.WithPolicy(p))
	e.AddNodes(t, coretest.Node("n1").GPUs(1, a100).Build())
	e.AddUsers(t, "alice")
	if got := e.Service.Policy(); got != p {
		t.Errorf("Policy() = %+v, want %+v", got, p)
	}
	_, err := e.Service.Book(ctx, e.Actor(t, "alice"), coretest.Booking(1, "").At(epoch, 2*hour).Build())
	wantError(t, err, core.CodeInvalid, "at most 1h")
}
