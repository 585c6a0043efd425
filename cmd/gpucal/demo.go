package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/store"
)

// runDemo starts a server on SQLite with a demo cluster (two A100 nodes and
// two H100 nodes of 8 GPUs), two users with bookings today and tomorrow, and
// an admin token saved where the client commands find it.
func runDemo(ctx context.Context, e *env, args []string) error {
	var cfg serverConfig
	var keep bool
	fs := newFlagSet("demo", e)
	cfg.flags(fs, e)
	fs.BoolVar(&keep, "keep", false, "keep the demo data of an earlier run instead of starting fresh")
	if _, err := parseArgs(fs, args, 0, 0); err != nil {
		return err
	}
	if e.getenv("GPUCAL_DATA") == "" && !flagSet(fs, "data") {
		cfg.data = filepath.Join(defaultDataDir(), "demo")
	}
	if cfg.db == "" && !keep {
		for _, suffix := range []string{"", "-wal", "-shm"} {
			if err := os.Remove(filepath.Join(cfg.data, "gpucal.db") + suffix); err != nil && !os.IsNotExist(err) {
				return fmt.Errorf("resetting the demo data: %w", err)
			}
		}
	}
	adminToken, _ := core.NewToken()
	cfg.bootstrapToken = adminToken
	var users map[string]string
	return serve(ctx, e, cfg, hooks{
		prepare: func(ctx context.Context, db *store.DB) (err error) {
			users, err = seedDemo(ctx, db, time.Now())
			return err
		},
		ready: func(url string) {
			saved, err := saveConfig(e, clientConfig{Server: url, Token: adminToken})
			if err != nil {
				saved = "(not saved: " + err.Error() + ")"
			}
			fmt.Fprintf(e.stdout, `
gpucal demo is running at %s  (data: %s)

  Admin API token: %s
  Saved for the client commands in %s
  Tokens of the demo users: alice %s
                            bob   %s

Try, in another terminal:
  gpucal nodes
  gpucal book 4 a100 --from "tomorrow 9:00" --to "tomorrow 13:00" --note "llama finetune"
  gpucal submit --gpus 8 --model h100 --name llama-ft --guess 3h -- python train.py
  gpucal queue
  gpucal when 16 a100 12h
  gpucal calendar --from today --days 2

Press Ctrl-C to stop.
`, url, cfg.dsn(), adminToken, saved, users["alice"], users["bob"])
		},
	})
}

// seedDemo fills an empty database with the demo cluster, users and
// bookings around now. It returns the users' tokens; on a database that
// already has nodes it changes nothing.
func seedDemo(ctx context.Context, db *store.DB, now time.Time) (map[string]string, error) {
	// Book "an hour ago" so that one reservation is already running.
	seedClock := now.Truncate(time.Hour).Add(-time.Hour)
	svc := core.NewService(db, core.WithClock(func() time.Time { return seedClock }))
	a := core.System
	nodes, err := svc.Nodes(ctx, a)
	if err != nil || len(nodes) > 0 {
		return map[string]string{"alice": "(kept from the earlier run)", "bob": "(kept from the earlier run)"}, err
	}
	for _, n := range []struct {
		name, model string
		mib         int64
	}{
		{"a100-1", "NVIDIA A100-SXM4-80GB", 81920}, {"a100-2", "NVIDIA A100-SXM4-80GB", 81920},
		{"h100-1", "NVIDIA H100 80GB HBM3", 81559}, {"h100-2", "NVIDIA H100 80GB HBM3", 81559},
	} {
		node := core.Node{Name: n.name}
		for i := range 8 {
			node.GPUs = append(node.GPUs, core.GPU{Index: i, Name: n.model, MemoryMiB: n.mib, UUID: demoUUID(n.name, i)})
		}
		if _, err := svc.AddNode(ctx, a, node); err != nil {
			return nil, fmt.Errorf("seeding node %s: %w", n.name, err)
		}
	}
	tokens := map[string]string{}
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
			return nil, fmt.Errorf("seeding a booking for %s: %w", b.Owner, err)
		}
	}
	return tokens, nil
}

// demoUUID makes a stable, realistic-looking GPU UUID for a demo GPU.
func demoUUID(node string, i int) string {
	h := sha256.Sum256(fmt.Appendf(nil, "%s/%d", node, i))
	return fmt.Sprintf("GPU-%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}
