package core_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/core/coretest"
)

// TestPropertyNoDoubleBooking drives the Service with a few hundred random
// Book, Cancel, Extend and Release calls from several actors while the
// clock moves, and checks after each call that:
//   - no GPU is held by two reservations at once (on the store's contents);
//   - every booking got exactly the GPUs it asked for: that many, distinct,
//     up, of the requested model, on one node when asked;
//   - refusals are domain errors, and conflicts come from the Service's own
//     check (with details), never from the store's last line of defence;
//   - every change wrote exactly one audit entry, every refusal none.
func TestPropertyNoDoubleBooking(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			runProperty(t, seed, 300)
		})
	}
}

func runProperty(t *testing.T, seed uint64, ops int) {
	e := newEnv(t,
		coretest.Node("a100-1").GPUs(8, a100).Build(),
		coretest.Node("a100-2").GPUs(4, a100).Down(2).Build(),
		coretest.Node("a40-1").GPUs(2, "NVIDIA A100-PCIE-40GB").Memory(40960).Build(),
		coretest.Node("h100-1").GPUs(4, h100).Build(),
	)
	rng := rand.New(rand.NewPCG(seed, 42))
	gpus := map[int64]core.GPU{}
	var nodes []core.Node
	_ = e.Store.View(ctx, func(tx core.Tx) (err error) { nodes, err = tx.Nodes(ctx); return err })
	for _, n := range nodes {
		for _, g := range n.GPUs {
			gpus[g.ID] = g
		}
	}
	actors := []string{"alice", "bob", "carol", "dave", "root"}
	models := []string{"", "a100", "a100-80gb", "a100-40gb", "h100", "NVIDIA H100 80GB HBM3"}
	var ids []int64
	counts := map[string]int{}

	pick := func() int64 {
		if len(ids) == 0 || rng.IntN(10) == 0 {
			return rng.Int64N(5) + 1 // sometimes a reservation that may not exist
		}
		return ids[rng.IntN(len(ids))]
	}
	for i := range ops {
		a := e.Actor(t, actors[rng.IntN(len(actors))])
		now := e.Clock.Now()
		before := len(e.AuditLog(t))
		var op string
		var err error
		switch k := rng.IntN(10); {
		case k < 5:
			op = "book"
			req := core.BookRequest{
				GPUs:     1 + rng.IntN(6),
				Model:    models[rng.IntN(len(models))],
				SameNode: rng.IntN(3) == 0,
				Start:    now.Add(time.Duration(rng.IntN(48*4)-1) * 15 * time.Minute),
			}
			req.End = req.Start.Add(time.Duration(1+rng.IntN(48)) * 15 * time.Minute)
			if rng.IntN(3) == 0 && a.Roles["vision"] != "" {
				req.Project = "vision"
			}
			var r core.Reservation
			r, err = e.Service.Book(ctx, a, req)
			if err == nil {
				ids = append(ids, r.ID)
				checkBooking(t, i, req, r, gpus)
			}
		case k < 7:
			op = "extend"
			req := core.ExtendRequest{By: time.Duration(1+rng.IntN(16)) * 15 * time.Minute}
			_, err = e.Service.Extend(ctx, a, pick(), req)
		case k < 8:
			op = "cancel"
			_, err = e.Service.Cancel(ctx, a, pick())
		case k < 9:
			op = "release"
			_, err = e.Service.Release(ctx, a, pick())
		default:
			op = "tick"
			e.Clock.Advance(time.Duration(rng.IntN(120)) * time.Minute)
			continue
		}
		code := core.ErrorCode(err)
		counts[op+" "+string(code)]++
		var de *core.Error
		switch {
		case err == nil:
		case !errors.As(err, &de) || code == core.CodeInternal:
			t.Fatalf("op %d %s: not a domain error: %v", i, op, err)
		case code == core.CodeConflict && de.Conflict == nil:
			t.Fatalf("op %d %s: conflict without details, from the store rather than the Service: %v", i, op, err)
		}
		wantAudit := 0
		if err == nil {
			wantAudit = 1
		}
		if got := len(e.AuditLog(t)) - before; got != wantAudit {
			t.Fatalf("op %d %s (err %v): %d audit entries, want %d", i, op, err, got, wantAudit)
		}
		checkNoOverlap(t, i, e.Store.AllSlots())
	}
	// The run is only worth something if it exercised both outcomes.
	for _, want := range []string{"book ", "book conflict", "extend ", "cancel ", "release "} {
		if counts[want] == 0 {
			t.Errorf("no %q outcome in %d ops (%v); change the seed or the mix", want, ops, counts)
		}
	}
	t.Logf("outcomes: %v", counts)
}

func checkBooking(t *testing.T, op int, req core.BookRequest, r core.Reservation, gpus map[int64]core.GPU) {
	t.Helper()
	if len(r.GPUs) != req.GPUs {
		t.Fatalf("op %d: booked %d GPUs, asked for %d", op, len(r.GPUs), req.GPUs)
	}
	want, _ := core.ParseModel(req.Model)
	seen := map[int64]bool{}
	for _, ref := range r.GPUs {
		g, ok := gpus[ref.ID]
		switch {
		case !ok:
			t.Fatalf("op %d: %s holds unknown GPU %d", op, r.Name(), ref.ID)
		case seen[ref.ID]:
			t.Fatalf("op %d: %s holds %s twice", op, r.Name(), g.Label())
		case g.State != core.GPUUp:
			t.Fatalf("op %d: %s holds %s, which is down", op, r.Name(), g.Label())
		case !want.Matches(g.Model()):
			t.Fatalf("op %d: %s holds %s (%s), asked for %q", op, r.Name(), g.Label(), g.Model(), req.Model)
		case req.SameNode && g.Node != r.GPUs[0].Node:
			t.Fatalf("op %d: %s spans nodes though one node was asked for", op, r.Name())
		}
		seen[ref.ID] = true
	}
}

// checkNoOverlap fails when two slots on one GPU intersect. slots are
// ordered by GPU, then start, so it is enough to compare each slot with the
// one on its GPU that ends last so far.
func checkNoOverlap(t *testing.T, op int, slots []core.Slot) {
	t.Helper()
	var last core.Slot
	for i, s := range slots {
		if i > 0 && s.GPUID == last.GPUID && s.Start.Before(last.End) {
			t.Fatalf("op %d: GPU %d double-booked by r%d [%s, %s) and r%d [%s, %s)", op, s.GPUID,
				last.Reservation, last.Start, last.End, s.Reservation, s.Start, s.End)
		}
		if i == 0 || s.GPUID != last.GPUID || s.End.After(last.End) {
			last = s
		}
	}
}

// TestConcurrentBooking books the same GPUs from many goroutines: exactly
// as many bookings as fit succeed, the rest get conflicts.
func TestConcurrentBooking(t *testing.T) {
	e := newEnv(t, coretest.Node("n1").GPUs(8, a100).Build())
	alice := e.Actor(t, "alice")
	var wg sync.WaitGroup
	errs := make([]error, 16)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = e.Service.Book(ctx, alice, coretest.Booking(2, "a100").Build())
		})
	}
	wg.Wait()
	var codes []string
	for _, err := range errs {
		codes = append(codes, string(core.ErrorCode(err)))
	}
	slices.Sort(codes)
	want := slices.Concat(slices.Repeat([]string{""}, 4), slices.Repeat([]string{"conflict"}, 12))
	if !slices.Equal(codes, want) {
		t.Errorf("outcomes = %q, want 4 bookings and 12 conflicts", codes)
	}
	checkNoOverlap(t, 0, e.Store.AllSlots())
}
