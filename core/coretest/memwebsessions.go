package coretest

import (
	"context"
	"time"

	"github.com/gpucal/gpucal/core"
)

// The web sign-in half of memTx: one-time links and browser sessions.

// InsertWebSession implements core.SessionTx.
func (tx *memTx) InsertWebSession(ctx context.Context, s core.WebSession) error {
	if err := tx.writable(); err != nil {
		return err
	}
	if tx.d.webSessions == nil {
		tx.d.webSessions = map[string]core.WebSession{}
	}
	if _, ok := tx.d.webSessions[s.Hash]; ok {
		return core.Errorf(core.CodeConflict, "web session already exists")
	}
	if _, ok := tx.d.users[s.User]; !ok {
		return core.Errorf(core.CodeNotFound, "user %s not found", s.User)
	}
	tx.d.webSessions[s.Hash] = s
	return nil
}

// WebSession implements core.SessionTx.
func (tx *memTx) WebSession(ctx context.Context, hash string) (core.WebSession, error) {
	s, ok := tx.d.webSessions[hash]
	if !ok {
		return core.WebSession{}, core.Errorf(core.CodeNotFound, "web session not found")
	}
	return s, nil
}

// UseWebSession implements core.SessionTx.
func (tx *memTx) UseWebSession(ctx context.Context, hash string, at time.Time) (bool, error) {
	if err := tx.writable(); err != nil {
		return false, err
	}
	s, ok := tx.d.webSessions[hash]
	if !ok || !s.UsedAt.IsZero() {
		return false, nil
	}
	s.UsedAt = at
	tx.d.webSessions[hash] = s
	return true, nil
}

// DeleteWebSession implements core.SessionTx.
func (tx *memTx) DeleteWebSession(ctx context.Context, hash string) error {
	if err := tx.writable(); err != nil {
		return err
	}
	delete(tx.d.webSessions, hash)
	return nil
}

// PruneWebSessions implements core.SessionTx.
func (tx *memTx) PruneWebSessions(ctx context.Context, before time.Time) (int64, error) {
	if err := tx.writable(); err != nil {
		return 0, err
	}
	var n int64
	for h, s := range tx.d.webSessions {
		if s.ExpiresAt.Before(before) {
			delete(tx.d.webSessions, h)
			n++
		}
	}
	return n, nil
}
