package coretest

import (
	"cmp"
	"context"
	"slices"

	"github.com/gpucal/gpucal/core"
)

// The chat half of memTx: identities linked to users.

// ChatUser implements core.Tx.
func (tx *memTx) ChatUser(ctx context.Context, id core.ChatIdentity) (core.ChatUser, error) {
	c, ok := tx.d.chat[id]
	if !ok {
		return core.ChatUser{}, core.Errorf(core.CodeNotFound, "chat identity %s not found", id)
	}
	return c, nil
}

// InsertChatUser implements core.Tx.
func (tx *memTx) InsertChatUser(ctx context.Context, c core.ChatUser) error {
	if err := tx.writable(); err != nil {
		return err
	}
	if _, ok := tx.d.users[c.User]; !ok {
		return core.Errorf(core.CodeNotFound, "user %s not found", c.User)
	}
	if _, ok := tx.d.chat[c.ChatIdentity]; ok {
		return core.Errorf(core.CodeConflict, "chat identity %s is linked already", c.ChatIdentity)
	}
	if tx.d.chat == nil {
		tx.d.chat = map[core.ChatIdentity]core.ChatUser{}
	}
	tx.d.chat[c.ChatIdentity] = c
	return nil
}

// SetChatUser implements core.Tx.
func (tx *memTx) SetChatUser(ctx context.Context, id core.ChatIdentity, user string) error {
	return tx.changeChat(id, func(c *core.ChatUser) error {
		if _, ok := tx.d.users[user]; !ok {
			return core.Errorf(core.CodeNotFound, "user %s not found", user)
		}
		c.User = user
		return nil
	})
}

// SetChatZone implements core.Tx.
func (tx *memTx) SetChatZone(ctx context.Context, id core.ChatIdentity, zone string) error {
	return tx.changeChat(id, func(c *core.ChatUser) error { c.Zone = zone; return nil })
}

func (tx *memTx) changeChat(id core.ChatIdentity, change func(*core.ChatUser) error) error {
	if err := tx.writable(); err != nil {
		return err
	}
	c, ok := tx.d.chat[id]
	if !ok {
		return core.Errorf(core.CodeNotFound, "chat identity %s not found", id)
	}
	if err := change(&c); err != nil {
		return err
	}
	tx.d.chat[id] = c
	return nil
}

// SetChatLang implements core.Tx.
func (tx *memTx) SetChatLang(ctx context.Context, id core.ChatIdentity, lang string) error {
	return tx.changeChat(id, func(c *core.ChatUser) error { c.Lang = lang; return nil })
}

// ChatUsersOf implements core.Tx.
func (tx *memTx) ChatUsersOf(ctx context.Context, user string) ([]core.ChatUser, error) {
	var out []core.ChatUser
	for _, c := range tx.d.chat {
		if c.User == user {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b core.ChatUser) int {
		return cmp.Or(cmp.Compare(a.Platform, b.Platform), cmp.Compare(a.Team, b.Team), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}
