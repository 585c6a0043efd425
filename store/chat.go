package store

import (
	"context"
	"database/sql"
	"errors"

	"github.com/gpucal/gpucal/core"
)

func (r chatRow) chatUser() core.ChatUser {
	return core.ChatUser{
		ChatIdentity: core.ChatIdentity{Platform: r.Platform, Team: r.Team, ID: r.ExternalID},
		User:         r.User, Zone: r.Zone, Lang: r.Lang, CreatedAt: r.CreatedAt.Time(),
	}
}

// ChatUser implements core.Tx.
func (t *tx) ChatUser(ctx context.Context, id core.ChatIdentity) (core.ChatUser, error) {
	var row chatRow
	err := t.db.NewSelect().Model(&row).
		Where("platform = ? AND team = ? AND external_id = ?", id.Platform, id.Team, id.ID).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return core.ChatUser{}, notFound("chat identity %s", id)
	} else if err != nil {
		return core.ChatUser{}, dbError("chat identity", err)
	}
	return row.chatUser(), nil
}

// InsertChatUser implements core.Tx.
func (t *tx) InsertChatUser(ctx context.Context, c core.ChatUser) error {
	row := chatRow{Platform: c.Platform, Team: c.Team, ExternalID: c.ID, User: c.User, Zone: c.Zone, Lang: c.Lang, CreatedAt: stamp(c.CreatedAt)}
	if _, err := t.db.NewInsert().Model(&row).Exec(ctx); err != nil {
		switch {
		case isUnique(err):
			return core.Errorf(core.CodeConflict, "chat identity %s is linked already", c.ChatIdentity)
		case isForeignKey(err):
			return notFound("user %s", c.User)
		}
		return dbError("insert chat identity", err)
	}
	return nil
}

// SetChatUser implements core.Tx.
func (t *tx) SetChatUser(ctx context.Context, id core.ChatIdentity, user string) error {
	return t.updateChat(ctx, id, "user_name = ?", user)
}

// SetChatZone implements core.Tx.
func (t *tx) SetChatZone(ctx context.Context, id core.ChatIdentity, zone string) error {
	return t.updateChat(ctx, id, "tz = ?", zone)
}

// SetChatLang implements core.Tx.
func (t *tx) SetChatLang(ctx context.Context, id core.ChatIdentity, lang string) error {
	return t.updateChat(ctx, id, "lang = ?", lang)
}

func (t *tx) updateChat(ctx context.Context, id core.ChatIdentity, set string, value string) error {
	res, err := t.db.NewUpdate().TableExpr("chat_identities").Set(set, value).
		Where("platform = ? AND team = ? AND external_id = ?", id.Platform, id.Team, id.ID).Exec(ctx)
	if err != nil {
		if isForeignKey(err) {
			return notFound("user %s", value)
		}
		return dbError("update chat identity", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return notFound("chat identity %s", id)
	}
	return nil
}

// ChatUsersOf implements core.Tx.
func (t *tx) ChatUsersOf(ctx context.Context, user string) ([]core.ChatUser, error) {
	var rows []chatRow
	err := t.db.NewSelect().Model(&rows).Where("user_name = ?", user).
		Order("platform", "team", "external_id").Scan(ctx)
	if err != nil {
		return nil, dbError("chat identities", err)
	}
	out := make([]core.ChatUser, len(rows))
	for i, r := range rows {
		out[i] = r.chatUser()
	}
	return out, nil
}
