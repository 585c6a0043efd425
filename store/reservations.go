package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/uptrace/bun"

	"github.com/gpucal/gpucal/core"
)

// Slots returns the slots of holding reservations with Start <= to and
// End >= from, by start, reservation and GPU.
func (t *tx) Slots(ctx context.Context, from, to time.Time) ([]core.Slot, error) {
	var rows []struct {
		GPUID       int64  `bun:"gpu_id"`
		Reservation int64  `bun:"reservation_id"`
		Owner       string `bun:"owner"`
		Project     string `bun:"project"`
		Start       stamp  `bun:"starts_at"`
		End         stamp  `bun:"ends_at"`
	}
	err := t.db.NewSelect().
		TableExpr("reservation_gpus AS rg").
		Join("JOIN reservations AS r ON r.id = rg.reservation_id").
		ColumnExpr("rg.gpu_id, rg.reservation_id, r.owner, r.project, rg.starts_at, rg.ends_at").
		Where("rg.holds").
		Where("rg.starts_at <= ?", stamp(to)).
		Where("rg.ends_at >= ?", stamp(from)).
		OrderExpr("rg.starts_at, rg.reservation_id, rg.gpu_id").
		Scan(ctx, &rows)
	if err != nil {
		return nil, dbError("slots", err)
	}
	out := make([]core.Slot, len(rows))
	for i, r := range rows {
		out[i] = core.Slot{GPUID: r.GPUID, Reservation: r.Reservation, Owner: r.Owner, Project: r.Project,
			Start: r.Start.Time(), End: r.End.Time()}
	}
	return out, nil
}

// Reservation returns reservation id with its GPUs. Inside Update on
// PostgreSQL it also locks the reservation until the transaction ends.
func (t *tx) Reservation(ctx context.Context, id int64) (core.Reservation, error) {
	var row reservationRow
	q := t.db.NewSelect().Model(&row).Where("id = ?", id)
	if t.forUpdate {
		q = q.For("UPDATE")
	}
	if err := q.Scan(ctx); errors.Is(err, sql.ErrNoRows) {
		return core.Reservation{}, notFound("reservation %s", core.ReservationName(id))
	} else if err != nil {
		return core.Reservation{}, dbError("reservation", err)
	}
	rs, err := t.withGPUs(ctx, []reservationRow{row})
	if err != nil {
		return core.Reservation{}, err
	}
	return rs[0], nil
}

// ReservationByKey finds the reservation owner booked with key.
func (t *tx) ReservationByKey(ctx context.Context, owner, key string) (core.Reservation, bool, error) {
	if key == "" {
		return core.Reservation{}, false, nil
	}
	var rows []reservationRow
	if err := t.db.NewSelect().Model(&rows).Where("owner = ?", owner).Where("request_key = ?", key).Scan(ctx); err != nil {
		return core.Reservation{}, false, dbError("reservation by key", err)
	}
	if len(rows) == 0 {
		return core.Reservation{}, false, nil
	}
	rs, err := t.withGPUs(ctx, rows)
	if err != nil {
		return core.Reservation{}, false, err
	}
	return rs[0], true, nil
}

// Reservations returns the reservations that match f, by start then ID.
func (t *tx) Reservations(ctx context.Context, f core.ReservationFilter) ([]core.Reservation, error) {
	var rows []reservationRow
	q := t.db.NewSelect().Model(&rows).Order("starts_at", "id")
	if !f.From.IsZero() {
		q = q.Where("ends_at > ?", stamp(f.From))
	}
	if !f.To.IsZero() {
		q = q.Where("starts_at < ?", stamp(f.To))
	}
	if f.Owner != "" {
		q = q.Where("owner = ?", f.Owner)
	}
	if f.Project != "" {
		q = q.Where("project = ?", f.Project)
	}
	if len(f.States) > 0 {
		states := make([]string, len(f.States))
		for i, s := range f.States {
			states[i] = string(s)
		}
		q = q.Where("state IN (?)", bun.In(states))
	}
	if f.Limit > 0 {
		q = q.Limit(int64(f.Limit))
	}
	if err := q.Scan(ctx); err != nil {
		return nil, dbError("reservations", err)
	}
	return t.withGPUs(ctx, rows)
}

// withGPUs converts rows and loads their GPUs, by node name and index.
func (t *tx) withGPUs(ctx context.Context, rows []reservationRow) ([]core.Reservation, error) {
	if len(rows) == 0 {
		return []core.Reservation{}, nil
	}
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	gpus, err := t.gpuRefs(ctx, "reservation_gpus", "reservation_id", ids)
	if err != nil {
		return nil, err
	}
	out := make([]core.Reservation, len(rows))
	for i, r := range rows {
		out[i] = r.reservation()
		out[i].GPUs = gpus[r.ID]
	}
	return out, nil
}

// InsertReservation stores r with one slot per GPU and fills in r.ID. It
// sorts r.GPUs by node and index, the order in which reads return them.
// A slot that overlaps another holding one is refused with a CodeConflict
// error that makes Update run the transaction again.
func (t *tx) InsertReservation(ctx context.Context, r *core.Reservation) error {
	if len(r.GPUs) == 0 {
		return core.Errorf(core.CodeInvalid, "a reservation needs at least one GPU")
	}
	row := reservationRow{
		Owner: r.Owner, Project: r.Project, Start: stamp(r.Start), End: stamp(r.End), State: string(r.State),
		Model: r.Model, Note: r.Note, RequestKey: r.RequestKey, CreatedAt: stamp(r.CreatedAt), UpdatedAt: stamp(r.UpdatedAt),
	}
	if _, err := t.db.NewInsert().Model(&row).Returning("id").Exec(ctx); err != nil {
		switch {
		case isUnique(err):
			// Only (owner, request_key) is unique: a concurrent request with
			// the same key won. Running the booking again returns its result.
			return keyRace{fmt.Errorf("%w: store: insert reservation: %w", core.Errorf(core.CodeConflict,
				"%s already has a reservation with idempotency key %q", r.Owner, r.RequestKey), err)}
		case isForeignKey(err):
			return core.Errorf(core.CodeInvalid, "user %q or project %q does not exist", r.Owner, r.Project)
		}
		return dbError("insert reservation", err)
	}
	slices.SortStableFunc(r.GPUs, func(a, b core.GPURef) int { return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.Index, b.Index)) })
	slots := make([]slotRow, len(r.GPUs))
	for i, g := range r.GPUs {
		slots[i] = slotRow{Reservation: row.ID, GPUID: g.ID, Start: row.Start, End: row.End, Holds: r.State.Holds()}
	}
	if _, err := t.db.NewInsert().Model(&slots).Exec(ctx); err != nil {
		switch {
		case isUnique(err):
			return core.Errorf(core.CodeInvalid, "a reservation cannot hold the same GPU twice")
		case isForeignKey(err):
			return core.Errorf(core.CodeInvalid, "a GPU of the reservation does not exist")
		}
		return dbError("insert reservation: gpus", err)
	}
	r.ID = row.ID
	return nil
}

// UpdateReservation stores r's State, End, Note and UpdatedAt. Its slots
// follow: they end at r.End and hold their GPUs unless r is cancelled.
func (t *tx) UpdateReservation(ctx context.Context, r core.Reservation) error {
	res, err := t.db.NewUpdate().Model((*reservationRow)(nil)).
		Set("state = ?", string(r.State)).
		Set("ends_at = ?", stamp(r.End)).
		Set("note = ?", r.Note).
		Set("updated_at = ?", stamp(r.UpdatedAt)).
		Where("id = ?", r.ID).
		Exec(ctx)
	if err != nil {
		return dbError("update reservation", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return dbError("update reservation", err)
	} else if n == 0 {
		return notFound("reservation %s", r.Name())
	}
	_, err = t.db.NewUpdate().Model((*slotRow)(nil)).
		Set("ends_at = ?", stamp(r.End)).
		Set("holds = ?", r.State.Holds()).
		Where("reservation_id = ?", r.ID).
		Exec(ctx)
	return dbError("update reservation: gpus", err)
}

// Overlap is two holding reservations whose windows overlap on one GPU,
// which the database should make impossible. A < B.
type Overlap struct {
	GPUID int64
	A, B  int64
}

// CheckOverlaps returns every pair of holding reservations that overlap on
// a GPU, by GPU then reservation. It is a self-check for tests and admins:
// the answer should always be empty.
func (db *DB) CheckOverlaps(ctx context.Context) ([]Overlap, error) {
	var rows []struct {
		GPUID int64 `bun:"gpu_id"`
		A     int64 `bun:"a"`
		B     int64 `bun:"b"`
	}
	err := db.read.NewSelect().
		TableExpr("reservation_gpus AS x").
		Join("JOIN reservation_gpus AS y ON y.gpu_id = x.gpu_id AND x.reservation_id < y.reservation_id").
		ColumnExpr("x.gpu_id AS gpu_id, x.reservation_id AS a, y.reservation_id AS b").
		Where("x.holds AND y.holds").
		Where("x.starts_at < y.ends_at AND y.starts_at < x.ends_at").
		OrderExpr("x.gpu_id, x.reservation_id, y.reservation_id").
		Scan(ctx, &rows)
	if err != nil {
		return nil, dbError("check overlaps", err)
	}
	out := make([]Overlap, len(rows))
	for i, r := range rows {
		out[i] = Overlap{GPUID: r.GPUID, A: r.A, B: r.B}
	}
	return out, nil
}

// gpuRefs loads the GPUs that the rows of a link table (reservation_gpus,
// job_gpus) give each owner in ids, by node name and index.
func (t *tx) gpuRefs(ctx context.Context, table, ownerColumn string, ids []int64) (map[int64][]core.GPURef, error) {
	var refs []struct {
		Owner     int64  `bun:"owner_id"`
		ID        int64  `bun:"id"`
		Node      string `bun:"node"`
		Index     int    `bun:"idx"`
		UUID      string `bun:"uuid"`
		Name      string `bun:"name"`
		MemoryMiB int64  `bun:"memory_mib"`
	}
	err := t.db.NewSelect().
		TableExpr("? AS l", bun.Ident(table)).
		Join("JOIN gpus AS g ON g.id = l.gpu_id").
		Join("JOIN nodes AS n ON n.id = g.node_id").
		ColumnExpr("l.? AS owner_id, g.id, n.name AS node, g.idx, g.uuid, g.name, g.memory_mib", bun.Ident(ownerColumn)).
		Where("l.? IN (?)", bun.Ident(ownerColumn), bun.In(ids)).
		OrderExpr("l.?, n.name, g.idx", bun.Ident(ownerColumn)).
		Scan(ctx, &refs)
	if err != nil {
		return nil, dbError(table, err)
	}
	gpus := make(map[int64][]core.GPURef, len(ids))
	for _, g := range refs {
		gpus[g.Owner] = append(gpus[g.Owner], core.GPURef{ID: g.ID, Node: g.Node, Index: g.Index, UUID: g.UUID,
			Model: core.GPU{Name: g.Name, MemoryMiB: g.MemoryMiB}.Model().String()})
	}
	return gpus, nil
}
