package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/gpucal/gpucal/agent/gpu"
	"github.com/gpucal/gpucal/agent/gpu/nvmlreader"
	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/store"
)

// demoNodes is the demo cluster: two A100 nodes and two H100 nodes of 8 GPUs.
var demoNodes = []struct {
	name, fake, model string
	mib               int64
}{
	{"a100-1", "8xA100-80GB", "NVIDIA A100-SXM4-80GB", 81920}, {"a100-2", "8xA100-80GB", "NVIDIA A100-SXM4-80GB", 81920},
	{"h100-1", "8xH100", "NVIDIA H100 80GB HBM3", 81559}, {"h100-2", "8xH100", "NVIDIA H100 80GB HBM3", 81559},
}

// runDemo starts a server on SQLite with a demo cluster, two users with
// bookings today and tomorrow, and an admin token saved where the client
// commands find it. The cluster's nodes are simulated GPUs run by real
// agents in this process, which join the server and run submitted jobs on
// this machine as the user running the demo; in a gpucal built without cgo
// (no simulated GPUs) the nodes are added by hand and jobs are planned but
// not run.
func runDemo(ctx context.Context, e *env, args []string) error {
	var cfg serverConfig
	var keep bool
	fs := newFlagSet("demo", e)
	cfg.flags(fs, e)
	fs.BoolVar(&keep, "keep", false, "keep the demo data of an earlier run instead of starting fresh")
	if _, err := parseArgs(fs, args, 0, 0); err != nil {
		return err
	}
	cfg.fromEnv(e)
	if e.getenv("GPUCAL_DATA") == "" && !flagSet(fs, "data") {
		cfg.data = filepath.Join(defaultDataDir(), "demo")
	}
	if !flagSet(fs, "web-public") && e.getenv("GPUCAL_WEB_PUBLIC") == "" {
		cfg.web.public = true // the demo's calendar is open to read
	}
	if !flagSet(fs, "heartbeat") {
		cfg.nodes.Interval = time.Second // the demo's agents are local: a job starts within a second of its plan
	}
	agentsDir := filepath.Join(cfg.data, "agents")
	if cfg.db == "" && !keep {
		for _, suffix := range []string{"", "-wal", "-shm"} {
			if err := os.Remove(filepath.Join(cfg.data, "gpucal.db") + suffix); err != nil && !os.IsNotExist(err) {
				return fmt.Errorf("resetting the demo data: %w", err)
			}
		}
		if err := os.RemoveAll(agentsDir); err != nil {
			return fmt.Errorf("resetting the demo agents: %w", err)
		}
	}
	simulated := fakeGPUsWork()
	adminToken, _ := core.NewToken()
	cfg.bootstrapToken = adminToken
	var users map[string]string
	var db *store.DB
	log, err := newLogger(e, cfg.logLevel, cfg.logFormat)
	if err != nil {
		return err
	}
	return serve(ctx, e, cfg, hooks{
		prepare: func(ctx context.Context, opened *store.DB) (err error) {
			db = opened
			if users, err = seedPeople(ctx, db, time.Now()); err != nil {
				return err
			}
			if !simulated {
				return seedNodes(ctx, db, time.Now())
			}
			return nil
		},
		ready: func(url string) {
			go func() {
				if simulated {
					if err := startDemoAgents(ctx, db, url, agentsDir, log); err != nil {
						fmt.Fprintf(e.stderr, "gpucal demo: starting the simulated nodes: %v\n", err)
						return
					}
				}
				if err := seedBookingsAndHistory(ctx, db, time.Now()); err != nil {
					fmt.Fprintf(e.stderr, "gpucal demo: %v\n", err)
					return
				}
				saved, err := saveConfig(e, clientConfig{Server: url, Token: adminToken})
				if err != nil {
					saved = "(not saved: " + err.Error() + ")"
				}
				nodes := "4 simulated nodes (2×8 A100, 2×8 H100) run by real gpucal agents in this process;\n" +
					"  jobs run on this machine as you, with their GPUs' readings simulated."
				if !simulated {
					nodes = "4 nodes added by hand (this gpucal was built without cgo, so no simulated GPUs):\n" +
						"  jobs are planned but nothing runs them. `make build` makes a gpucal with them."
				}
				fmt.Fprintf(e.stdout, `
gpucal demo is running at %s  (data: %s)
  %s

  Admin API token: %s
  Saved for the client commands in %s
  Tokens of the demo users: alice %s
                            bob   %s

Open %s in a browser: the calendar (read-only until you sign in with
  one of the tokens above at %s/signin; then drag across free time to book).

Try, in another terminal:
  gpucal nodes
  gpucal book 4 a100 --from "tomorrow 9:00" --to "tomorrow 13:00" --note "llama finetune"
  gpucal submit --gpus 2 --model h100 --name demo-train --guess 1m -- sh -c 'for i in $(seq 60); do echo "Epoch $i/60"; sleep 1; done'
  gpucal queue
  gpucal logs JOB --follow        (JOB: the ID submit printed, like j99)
  gpucal report --from -7d        (a week of demo history; gpucal digest --preview week.png draws it)
  gpucal when 16 a100 12h
  gpucal calendar --from today --days 2

Press Ctrl-C to stop.
`, url, cfg.dsn(), nodes, adminToken, saved, users["alice"], users["bob"], url, url)
			}()
		},
	})
}

// fakeGPUsWork reports whether this gpucal can simulate GPUs (it was
// built with cgo).
func fakeGPUsWork() bool {
	r, err := nvmlreader.Fake([]gpu.FakeGPU{{Count: 1, Model: "H100"}}, nvmlreader.FakeOptions{})
	if err != nil {
		return false
	}
	r.Close()
	return true
}

// startDemoAgents runs one agent per demo node, each with simulated GPUs
// and its own state directory, joined with a fresh join token, and returns
// once every node is in the inventory.
func startDemoAgents(ctx context.Context, db *store.DB, url, dir string, log *slog.Logger) error {
	svc := core.NewService(db)
	// The admin the server made at start-up issues it (join tokens name a user).
	token, _, err := svc.CreateJoinToken(ctx, core.Actor{User: "admin", Admin: true}, time.Hour)
	if err != nil {
		return err
	}
	for i, n := range demoNodes {
		cfg := agentConfig{name: n.name, fake: n.fake, seed: uint64(i + 1), interval: time.Second,
			server: url, joinToken: token, stateDir: filepath.Join(dir, n.name), runAsSelf: true}
		go func() {
			if err := nodeAgent(ctx, cfg, log.With("component", "agent", "node", n.name), io.Discard); err != nil && ctx.Err() == nil {
				log.Error("demo agent stopped", "node", n.name, "err", err)
			}
		}()
	}
	for {
		nodes, err := svc.Nodes(ctx, core.System)
		if err != nil {
			return err
		}
		joined := 0
		for _, n := range nodes {
			if n.State == core.NodeReady {
				joined++
			}
		}
		if joined >= len(demoNodes) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// seedPeople fills an empty database with the demo users and projects
// and returns the users' tokens; on a database that has them it changes
// nothing.
func seedPeople(ctx context.Context, db *store.DB, now time.Time) (map[string]string, error) {
	svc := core.NewService(db, core.WithClock(func() time.Time { return now }))
	a := core.System
	if us, err := svc.Users(ctx, a); err != nil || len(us) > 0 {
		return map[string]string{"alice": "(kept from the earlier run)", "bob": "(kept from the earlier run)"}, err
	}
	tokens := map[string]string{}
	var err error
	for _, u := range []string{"alice", "bob"} {
		if tokens[u], err = svc.CreateToken(ctx, a, u, "demo", false); err != nil {
			return nil, fmt.Errorf("seeding user %s: %w", u, err)
		}
	}
	for _, p := range []core.Project{
		{Name: "nlp", Members: []core.Member{{User: "alice", Role: core.RoleAdmin}}},
		{Name: "vision", Members: []core.Member{{User: "bob", Role: core.RoleAdmin}, {User: "alice", Role: core.RoleMember}}},
	} {
		if _, err := svc.AddProject(ctx, a, p); err != nil {
			return nil, fmt.Errorf("seeding project %s: %w", p.Name, err)
		}
	}
	return tokens, nil
}

// seedNodes adds the demo nodes by hand, when there are none.
func seedNodes(ctx context.Context, db *store.DB, now time.Time) error {
	svc := core.NewService(db, core.WithClock(func() time.Time { return now }))
	if nodes, err := svc.Nodes(ctx, core.System); err != nil || len(nodes) > 0 {
		return err
	}
	for _, n := range demoNodes {
		node := core.Node{Name: n.name}
		for i := range 8 {
			node.GPUs = append(node.GPUs, core.GPU{Index: i, Name: n.model, MemoryMiB: n.mib, UUID: demoUUID(n.name, i)})
		}
		if _, err := svc.AddNode(ctx, core.System, node); err != nil {
			return fmt.Errorf("seeding node %s: %w", n.name, err)
		}
	}
	return nil
}

// seedBookings books the demo reservations around now, when there are none.
func seedBookings(ctx context.Context, db *store.DB, now time.Time) error {
	// Book "an hour ago" so that one reservation is already running.
	seedClock := now.Truncate(time.Hour).Add(-time.Hour)
	svc := core.NewService(db, core.WithClock(func() time.Time { return seedClock }))
	a := core.System
	if rs, err := svc.Reservations(ctx, a, core.ReservationFilter{}); err != nil || len(rs) > 0 {
		return err
	}
	hour := now.Truncate(time.Hour)
	tomorrow := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, now.Location())
	for _, b := range []core.BookRequest{
		{Owner: "alice", Project: "nlp", GPUs: 4, Model: "a100", Node: "a100-1", Start: hour.Add(-time.Hour), End: hour.Add(3 * time.Hour), Note: "llama-7b finetune"},
		{Owner: "bob", Project: "vision", GPUs: 8, Model: "h100", SameNode: true, Start: hour.Add(time.Hour), End: hour.Add(7 * time.Hour), Note: "vit-l pretraining"},
		{Owner: "bob", Project: "vision", GPUs: 2, Model: "a100", Start: tomorrow.Add(9 * time.Hour), End: tomorrow.Add(12 * time.Hour), Note: "eval sweep"},
		{Owner: "alice", Project: "nlp", GPUs: 8, Model: "h100", SameNode: true, Start: tomorrow.Add(10 * time.Hour), End: tomorrow.Add(16 * time.Hour), Note: "rlhf run"},
		{Owner: "bob", Project: "vision", GPUs: 4, Model: "a100", Start: tomorrow.Add(14 * time.Hour), End: tomorrow.Add(18 * time.Hour), Note: "detector ablations"},
	} {
		if _, err := svc.Book(ctx, a, b); err != nil {
			return fmt.Errorf("seeding a booking for %s: %w", b.Owner, err)
		}
	}
	return nil
}

// demoUUID makes a stable, realistic-looking GPU UUID for a demo GPU.
func demoUUID(node string, i int) string {
	h := sha256.Sum256(fmt.Appendf(nil, "%s/%d", node, i))
	return fmt.Sprintf("GPU-%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}
