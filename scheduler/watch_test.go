package scheduler_test

import (
	"context"
	"testing"
	"time"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/core/coretest"
	"github.com/gpucal/gpucal/scheduler"
)

// TestWatchLoop: the loop runs the watch on its period, says when it wrote
// something, and returns when its context ends.
func TestWatchLoop(t *testing.T) {
	e := coretest.NewEnv()
	e.AddNodes(t, coretest.Node("node-1").GPUs(2, "NVIDIA A100-SXM4-80GB").Build())
	e.AddUsers(t, "alice")
	if _, err := e.Service.Book(context.Background(), e.Actor(t, "alice"), coretest.Booking(1, "a100").At(e.Clock.Now().Add(5*time.Minute), time.Hour).Build()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	wrote := make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() {
		done <- scheduler.Watch(ctx, e.Service, nil, time.Millisecond, func() {
			select {
			case wrote <- struct{}{}:
			default:
			}
		})
	}()
	select {
	case <-wrote:
	case <-time.After(10 * time.Second):
		t.Fatal("the watch never reported the reminder")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Watch returned %v", err)
	}
	var events []core.Event
	e.Store.View(context.Background(), func(tx core.Tx) (err error) { events, err = tx.Events(context.Background(), 0, 0); return err })
	if len(events) != 1 || events[0].Kind != core.EventReservationSoon {
		t.Errorf("events %+v; want one reminder however often the watch ran", events)
	}
}
