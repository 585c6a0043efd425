package store

import (
	"context"
	"database/sql"
	"errors"

	"github.com/gpucal/gpucal/core"
)

// User returns the user called name.
func (t *tx) User(ctx context.Context, name string) (core.User, error) {
	var row userRow
	if err := t.db.NewSelect().Model(&row).Where("name = ?", name).Scan(ctx); errors.Is(err, sql.ErrNoRows) {
		return core.User{}, notFound("user %s", name)
	} else if err != nil {
		return core.User{}, dbError("user", err)
	}
	return row.user(), nil
}

// Users returns every user by name.
func (t *tx) Users(ctx context.Context) ([]core.User, error) {
	var rows []userRow
	if err := t.db.NewSelect().Model(&rows).Order("name").Scan(ctx); err != nil {
		return nil, dbError("users", err)
	}
	out := make([]core.User, len(rows))
	for i, r := range rows {
		out[i] = r.user()
	}
	return out, nil
}

// InsertUser stores u.
func (t *tx) InsertUser(ctx context.Context, u core.User) error {
	row := userRow{Name: u.Name, Admin: u.Admin, Email: u.Email, CreatedAt: stamp(u.CreatedAt)}
	if _, err := t.db.NewInsert().Model(&row).Exec(ctx); err != nil {
		if isUnique(err) {
			return conflict("user %s", u.Name)
		}
		return dbError("insert user", err)
	}
	return nil
}

// SetEmail implements core.Tx.
func (t *tx) SetEmail(ctx context.Context, user, email string) error {
	res, err := t.db.NewUpdate().TableExpr("users").Set("email = ?", email).Where("name = ?", user).Exec(ctx)
	if err != nil {
		return dbError("set email", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return notFound("user %s", user)
	}
	return nil
}

// SetAdmin grants or revokes user's site admin role.
func (t *tx) SetAdmin(ctx context.Context, user string, admin bool) error {
	res, err := t.db.NewUpdate().Model((*userRow)(nil)).Set("admin = ?", admin).Where("name = ?", user).Exec(ctx)
	if err != nil {
		return dbError("set admin", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return dbError("set admin", err)
	} else if n == 0 {
		return notFound("user %s", user)
	}
	return nil
}

// Project returns the project called name with its members by user name.
func (t *tx) Project(ctx context.Context, name string) (core.Project, error) {
	var row projectRow
	if err := t.db.NewSelect().Model(&row).Where("name = ?", name).Scan(ctx); errors.Is(err, sql.ErrNoRows) {
		return core.Project{}, notFound("project %s", name)
	} else if err != nil {
		return core.Project{}, dbError("project", err)
	}
	ps, err := t.withMembers(ctx, []projectRow{row})
	if err != nil {
		return core.Project{}, err
	}
	return ps[0], nil
}

// Projects returns every project by name, with its members by user name.
func (t *tx) Projects(ctx context.Context) ([]core.Project, error) {
	var rows []projectRow
	if err := t.db.NewSelect().Model(&rows).Order("name").Scan(ctx); err != nil {
		return nil, dbError("projects", err)
	}
	return t.withMembers(ctx, rows)
}

func (t *tx) withMembers(ctx context.Context, rows []projectRow) ([]core.Project, error) {
	out := make([]core.Project, len(rows))
	if len(rows) == 0 {
		return out, nil
	}
	names := make([]string, len(rows))
	for i, r := range rows {
		names[i] = r.Name
	}
	var members []memberRow
	q := t.db.NewSelect().Model(&members).Order("project", "user_name")
	if len(rows) == 1 { // the common case; the others read the whole, small table
		q = q.Where("project = ?", rows[0].Name)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, dbError("project members", err)
	}
	byProject := map[string][]core.Member{}
	for _, m := range members {
		byProject[m.Project] = append(byProject[m.Project], core.Member{User: m.User, Role: core.Role(m.Role)})
	}
	for i, r := range rows {
		out[i] = core.Project{Name: r.Name, Members: byProject[r.Name], CreatedAt: r.CreatedAt.Time()}
	}
	return out, nil
}

// InsertProject stores p without its members; core adds those with
// SetMember once it has checked that each user exists.
func (t *tx) InsertProject(ctx context.Context, p core.Project) error {
	row := projectRow{Name: p.Name, CreatedAt: stamp(p.CreatedAt)}
	if _, err := t.db.NewInsert().Model(&row).Exec(ctx); err != nil {
		if isUnique(err) {
			return conflict("project %s", p.Name)
		}
		return dbError("insert project", err)
	}
	return nil
}

// SetMember adds m to project or changes m's role.
func (t *tx) SetMember(ctx context.Context, project string, m core.Member) error {
	row := memberRow{Project: project, User: m.User, Role: string(m.Role)}
	_, err := t.db.NewInsert().Model(&row).
		On("CONFLICT (project, user_name) DO UPDATE").
		Set("role = EXCLUDED.role").
		Exec(ctx)
	if isForeignKey(err) {
		return core.Errorf(core.CodeNotFound, "project %s or user %s not found", project, m.User)
	}
	return dbError("set member", err)
}

// Roles returns the projects user belongs to, with the role in each.
func (t *tx) Roles(ctx context.Context, user string) (map[string]core.Role, error) {
	var rows []memberRow
	if err := t.db.NewSelect().Model(&rows).Where("user_name = ?", user).Scan(ctx); err != nil {
		return nil, dbError("roles", err)
	}
	out := make(map[string]core.Role, len(rows))
	for _, r := range rows {
		out[r.Project] = core.Role(r.Role)
	}
	return out, nil
}

// InsertToken stores tok and fills in its ID.
func (t *tx) InsertToken(ctx context.Context, tok *core.Token) error {
	row := tokenRow{User: tok.User, Name: tok.Name, Hash: tok.Hash, CreatedAt: stamp(tok.CreatedAt)}
	if _, err := t.db.NewInsert().Model(&row).Returning("id").Exec(ctx); err != nil {
		switch {
		case isUnique(err):
			return core.Errorf(core.CodeConflict, "that token already exists")
		case isForeignKey(err):
			return notFound("user %s", tok.User)
		}
		return dbError("insert token", err)
	}
	tok.ID = row.ID
	return nil
}

// TokenUser returns the owner of the token with this hash.
func (t *tx) TokenUser(ctx context.Context, hash string) (core.User, error) {
	var row userRow
	err := t.db.NewSelect().Model(&row).
		Join("JOIN tokens AS t ON t.user_name = u.name").
		Where("t.hash = ?", hash).
		Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return core.User{}, core.Errorf(core.CodeNotFound, "token not found")
	} else if err != nil {
		return core.User{}, dbError("token user", err)
	}
	return row.user(), nil
}

// Audit appends e to the audit log.
func (t *tx) Audit(ctx context.Context, e core.AuditEntry) error {
	row := auditRow{At: stamp(e.At), Actor: e.Actor, Action: e.Action, Object: e.Object, Detail: e.Detail}
	_, err := t.db.NewInsert().Model(&row).Exec(ctx)
	return dbError("audit", err)
}

// AuditLog returns the entries that match f, newest first.
func (t *tx) AuditLog(ctx context.Context, f core.AuditFilter) ([]core.AuditEntry, error) {
	var rows []auditRow
	q := t.db.NewSelect().Model(&rows).OrderExpr("at DESC, id DESC")
	if f.Actor != "" {
		q = q.Where("actor = ?", f.Actor)
	}
	if f.Object != "" {
		q = q.Where("object = ?", f.Object)
	}
	if f.Limit > 0 {
		q = q.Limit(int64(f.Limit))
	}
	if err := q.Scan(ctx); err != nil {
		return nil, dbError("audit log", err)
	}
	out := make([]core.AuditEntry, len(rows))
	for i, r := range rows {
		out[i] = core.AuditEntry{ID: r.ID, At: r.At.Time(), Actor: r.Actor, Action: r.Action, Object: r.Object, Detail: r.Detail}
	}
	return out, nil
}
