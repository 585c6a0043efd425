package store

import (
	"context"
	"strings"

	"github.com/gpucal/gpucal/core"
)

// Nodes returns every node by name, each with its GPUs by index.
func (t *tx) Nodes(ctx context.Context) ([]core.Node, error) {
	var nodes []nodeRow
	if err := t.db.NewSelect().Model(&nodes).Order("name").Scan(ctx); err != nil {
		return nil, dbError("nodes", err)
	}
	var gpus []gpuRow
	if err := t.db.NewSelect().Model(&gpus).Order("node_id", "idx").Scan(ctx); err != nil {
		return nil, dbError("nodes: gpus", err)
	}
	byNode := make(map[int64][]core.GPU, len(nodes))
	names := make(map[int64]string, len(nodes))
	for _, n := range nodes {
		names[n.ID] = n.Name
	}
	for _, g := range gpus {
		byNode[g.NodeID] = append(byNode[g.NodeID], core.GPU{
			ID: g.ID, NodeID: g.NodeID, Node: names[g.NodeID], Index: g.Index, Name: g.Name,
			MemoryMiB: g.MemoryMiB, UUID: g.UUID, State: core.GPUState(g.State),
		})
	}
	out := make([]core.Node, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, core.Node{ID: n.ID, Name: n.Name, GPUs: byNode[n.ID], CreatedAt: n.CreatedAt.Time()})
	}
	return out, nil
}

// InsertNode stores n and its GPUs and fills in their IDs, NodeID and Node.
func (t *tx) InsertNode(ctx context.Context, n *core.Node) error {
	row := nodeRow{Name: n.Name, CreatedAt: stamp(n.CreatedAt)}
	if _, err := t.db.NewInsert().Model(&row).Returning("id").Exec(ctx); err != nil {
		if isUnique(err) {
			return conflict("node %s", n.Name)
		}
		return dbError("insert node", err)
	}
	n.ID = row.ID
	// One GPU at a time, so that a taken UUID can be named.
	for i := range n.GPUs {
		g := &n.GPUs[i]
		state := g.State
		if state == "" {
			state = core.GPUUp
		}
		gr := gpuRow{NodeID: n.ID, Index: g.Index, Name: g.Name, MemoryMiB: g.MemoryMiB, UUID: g.UUID, State: string(state)}
		if _, err := t.db.NewInsert().Model(&gr).Returning("id").Exec(ctx); err != nil {
			switch {
			case isUnique(err) && strings.Contains(err.Error(), "uuid"):
				return conflict("GPU UUID %s", g.UUID)
			case isUnique(err):
				return conflict("GPU %s/%d", n.Name, g.Index)
			}
			return dbError("insert node: gpu", err)
		}
		g.ID, g.NodeID, g.Node, g.State = gr.ID, n.ID, n.Name, state
	}
	return nil
}
