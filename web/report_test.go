package web_test

import (
	"context"
	"net/http"
	"testing"
	"time"
)

func TestReportRoute(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	rep, err := f.alice.Report(ctx, now.Add(-24*time.Hour), now)
	if err != nil {
		t.Fatal(err)
	}
	if rep.GPUs != 8 || rep.Capacity != 8*24 || rep.Used != 0 {
		t.Errorf("report %+v; want 8 GPUs, 192 GPU-hours offered, none used", rep)
	}
	if _, err := f.alice.Report(ctx, now, now.Add(-time.Hour)); apiErr(t, err).Status != http.StatusUnprocessableEntity {
		t.Errorf("a period ending before it starts: %v; want 422", err)
	}
	if _, err := f.alice.Report(ctx, now.Add(-500*24*time.Hour), now); apiErr(t, err).Status != http.StatusUnprocessableEntity {
		t.Errorf("a period of 500 days: %v; want 422", err)
	}
}
