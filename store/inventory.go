package store

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"

	"github.com/gpucal/gpucal/core"
)

// Nodes returns every node by name, each with its GPUs by index.
func (t *tx) Nodes(ctx context.Context) ([]core.Node, error) {
	var rows []nodeRow
	if err := t.db.NewSelect().Model(&rows).Order("name").Scan(ctx); err != nil {
		return nil, dbError("nodes", err)
	}
	return t.nodesWithGPUs(ctx, rows, "nodes")
}

// Node implements core.Tx.
func (t *tx) Node(ctx context.Context, name string) (core.Node, error) {
	var rows []nodeRow
	if err := t.db.NewSelect().Model(&rows).Where("name = ?", name).Scan(ctx); err != nil {
		return core.Node{}, dbError("node", err)
	}
	if len(rows) == 0 {
		return core.Node{}, notFound("node %s", name)
	}
	nodes, err := t.nodesWithGPUs(ctx, rows, "node")
	if err != nil {
		return core.Node{}, err
	}
	return nodes[0], nil
}

// nodesWithGPUs converts node rows and loads their GPUs: all of them, or for a
// single node only its own.
func (t *tx) nodesWithGPUs(ctx context.Context, nodes []nodeRow, op string) ([]core.Node, error) {
	var gpus []gpuRow
	q := t.db.NewSelect().Model(&gpus).Order("node_id", "idx")
	if len(nodes) == 1 {
		q = q.Where("node_id = ?", nodes[0].ID)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, dbError(op+": gpus", err)
	}
	byNode := make(map[int64][]core.GPU, len(nodes))
	names := make(map[int64]string, len(nodes))
	for _, n := range nodes {
		names[n.ID] = n.Name
	}
	for _, g := range gpus {
		byNode[g.NodeID] = append(byNode[g.NodeID], g.gpu(names[g.NodeID]))
	}
	out := make([]core.Node, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, core.Node{ID: n.ID, Name: n.Name, GPUs: byNode[n.ID], CreatedAt: n.CreatedAt.Time(),
			State: core.NodeState(n.State), LastSeen: n.LastSeen.Time(), Agent: n.Agent, NVML: n.NVML})
	}
	return out, nil
}

// InsertNode stores n and its GPUs and fills in their IDs, NodeID and Node.
func (t *tx) InsertNode(ctx context.Context, n *core.Node) error {
	if err := n.CheckStates(); err != nil {
		return err
	}
	row := nodeRow{Name: n.Name, CreatedAt: stamp(n.CreatedAt), State: string(n.State), LastSeen: stamp(n.LastSeen),
		Agent: n.Agent, NVML: n.NVML}
	if _, err := t.db.NewInsert().Model(&row).Returning("id").Exec(ctx); err != nil {
		if isUnique(err) {
			return conflict("node %s", n.Name)
		}
		return dbError("insert node", err)
	}
	n.ID = row.ID
	for i := range n.GPUs {
		if err := t.insertGPU(ctx, n, &n.GPUs[i]); err != nil {
			return err
		}
	}
	return nil
}

// insertGPU stores g, a new GPU of n, and fills in its ID, NodeID, Node
// and State (up unless given). One GPU at a time, so that a taken UUID can
// be named.
func (t *tx) insertGPU(ctx context.Context, n *core.Node, g *core.GPU) error {
	if g.State == "" {
		g.State = core.GPUUp
	}
	row := gpuRowOf(n.ID, *g)
	row.ID = 0
	if _, err := t.db.NewInsert().Model(&row).Returning("id").Exec(ctx); err != nil {
		switch {
		case isUnique(err) && strings.Contains(err.Error(), "uuid"):
			return conflict("GPU UUID %s", g.UUID)
		case isUnique(err):
			return conflict("GPU %s/%d", n.Name, g.Index)
		}
		return dbError("insert node: gpu", err)
	}
	g.ID, g.NodeID, g.Node = row.ID, n.ID, n.Name
	return nil
}

// UpdateNode stores n's State, LastSeen, Agent and NVML and, for each of
// its GPUs, Name, MemoryMiB, State, Fault and Telemetry. A GPU with ID 0 is
// inserted and gets its ID, NodeID, Node and State (up unless given); a
// GPU with another ID must be one of n's. GPUs missing from n.GPUs are
// left as they are.
func (t *tx) UpdateNode(ctx context.Context, n *core.Node) error {
	if err := n.CheckStates(); err != nil {
		return err
	}
	row := nodeRow{ID: n.ID, State: string(n.State), LastSeen: stamp(n.LastSeen), Agent: n.Agent, NVML: n.NVML}
	res, err := t.db.NewUpdate().Model(&row).Column("state", "last_seen", "agent", "nvml").WherePK().Exec(ctx)
	if err := affectedOne(res, err, "update node"); err != nil {
		if errors.Is(err, errNoRows) {
			return notFound("node %s", nodeLabel(*n))
		}
		return err
	}
	for i := range n.GPUs {
		g := &n.GPUs[i]
		if g.ID == 0 {
			if err := t.insertGPU(ctx, n, g); err != nil {
				return err
			}
			continue
		}
		gr := gpuRowOf(n.ID, *g)
		res, err := t.db.NewUpdate().Model(&gr).
			Column("idx", "uuid", "name", "memory_mib", "state", "fault", "util", "used_mib", "temp_c", "power_w", "telemetry_at", "last_xid", "agent_fault", "idle_since").
			WherePK().
			Where("node_id = ?", n.ID).
			Exec(ctx)
		if err := affectedOne(res, err, "update node: gpu"); err != nil {
			if errors.Is(err, errNoRows) {
				return core.Errorf(core.CodeNotFound, "GPU %d of node %s not found", g.ID, nodeLabel(*n))
			}
			return err
		}
	}
	return nil
}

// nodeLabel names n in messages: by name when the caller gave one.
func nodeLabel(n core.Node) string {
	if n.Name != "" {
		return n.Name
	}
	return "#" + strconv.FormatInt(n.ID, 10)
}

// SetNodeCredential stores the hash of node id's credential, replacing the
// one before: the old credential stops working in the same transaction.
// An empty hash removes the credential. A hash another node has is
// refused with a CodeConflict error.
func (t *tx) SetNodeCredential(ctx context.Context, id int64, hash string) error {
	var h any // NULL for none: the unique index then never compares it
	if hash != "" {
		h = hash
	}
	res, err := t.db.NewUpdate().Model((*nodeRow)(nil)).Set("credential_hash = ?", h).Where("id = ?", id).Exec(ctx)
	if err := affectedOne(res, err, "set node credential"); err != nil {
		switch {
		case errors.Is(err, errNoRows):
			return notFound("node #%d", id)
		case isUnique(err):
			return core.Errorf(core.CodeConflict, "that credential already belongs to another node")
		}
		return err
	}
	return nil
}

// NodeByCredential returns the node, with its GPUs, whose credential has
// this hash.
func (t *tx) NodeByCredential(ctx context.Context, hash string) (core.Node, error) {
	var row nodeRow
	err := t.db.NewSelect().Model(&row).Where("credential_hash = ?", hash).Scan(ctx)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return core.Node{}, core.Errorf(core.CodeNotFound, "node credential not found")
	case err != nil:
		return core.Node{}, dbError("node by credential", err)
	}
	ns, err := t.nodesWithGPUs(ctx, []nodeRow{row}, "node by credential")
	if err != nil {
		return core.Node{}, err
	}
	return ns[0], nil
}

// errNoRows marks an UPDATE that matched no row.
var errNoRows = errors.New("store: no row matched")

// affectedOne checks the outcome of an UPDATE of one row: the error of
// Exec wrapped by dbError (the cause kept for isUnique), or errNoRows.
func affectedOne(res sql.Result, err error, op string) error {
	if err != nil {
		return dbError(op, err)
	}
	n, err := res.RowsAffected()
	switch {
	case err != nil:
		return dbError(op, err)
	case n == 0:
		return errNoRows
	}
	return nil
}
