package core

import (
	"context"
	"strings"
	"time"
)

// Web sign-in (DESIGN §9): a person signs in to the web calendar with a
// one-time link the chat bot sends them, or with an API token; either way
// they get a session, which the browser keeps in an HTTP-only cookie. Only
// hashes are stored, like API tokens.

// WebSessionKind says what a stored web credential is.
type WebSessionKind string

const (
	// SignInLink is a one-time link: redeemed once, within SignInLinkTTL.
	SignInLink WebSessionKind = "link"
	// BrowserSession is a signed-in browser, valid for SessionTTL.
	BrowserSession WebSessionKind = "session"
)

const (
	// SignInLinkTTL is how long a sign-in link stays valid: long enough
	// to open the chat message, short enough that a leaked one is useless.
	SignInLinkTTL = 15 * time.Minute
	// SessionTTL is how long a browser stays signed in.
	SessionTTL = 14 * 24 * time.Hour
)

// webTokenPrefix marks sign-in links and session cookies, so that they can
// never be mistaken for API tokens (and secret scanners can find them).
const webTokenPrefix = "gpucalweb_"

// WebSession is a stored sign-in link or browser session.
type WebSession struct {
	Hash      string // HashToken of the plain token
	Kind      WebSessionKind
	User      string
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedAt    time.Time // links: when redeemed; zero until then
}

// SessionTx is the part of Tx that keeps web sessions.
type SessionTx interface {
	// InsertWebSession stores s; its hash must be new.
	InsertWebSession(ctx context.Context, s WebSession) error
	// WebSession returns the session or link with this hash (CodeNotFound
	// when there is none).
	WebSession(ctx context.Context, hash string) (WebSession, error)
	// UseWebSession marks the link with this hash used at at, in one
	// statement, and reports whether this call did: false when it was
	// used already (or does not exist).
	UseWebSession(ctx context.Context, hash string, at time.Time) (bool, error)
	// DeleteWebSession forgets a session; deleting a missing one is no error.
	DeleteWebSession(ctx context.Context, hash string) error
	// PruneWebSessions deletes sessions and links that expired before
	// before and returns how many went.
	PruneWebSessions(ctx context.Context, before time.Time) (int64, error)
}

// newWebToken returns a fresh sign-in link or session token and its hash.
func newWebToken() (plain, hash string) {
	p, _ := NewToken()
	plain = webTokenPrefix + strings.TrimPrefix(p, tokenPrefix)
	return plain, HashToken(plain)
}

// IsWebToken reports whether s looks like a sign-in link or session token.
func IsWebToken(s string) bool {
	rest, ok := strings.CutPrefix(s, webTokenPrefix)
	if !ok || len(rest) != 48 {
		return false
	}
	for _, c := range rest {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// CreateSignInLink issues a one-time sign-in token for user, valid for
// SignInLinkTTL. People ask for their own (the chat bot asks as them);
// admins may ask for anyone's.
func (s *Service) CreateSignInLink(ctx context.Context, a Actor, user string) (token string, expires time.Time, err error) {
	if user == "" {
		user = a.User
	}
	if user != a.User && !a.Admin {
		return "", time.Time{}, Errorf(CodeForbidden, "only admins may create sign-in links for other users")
	}
	if err := ValidName("user", user); err != nil {
		return "", time.Time{}, err
	}
	now := s.Now()
	plain, hash := newWebToken()
	expires = now.Add(SignInLinkTTL)
	err = s.store.Update(ctx, func(tx Tx) error {
		if _, err := tx.User(ctx, user); err != nil {
			return err
		}
		if err := tx.InsertWebSession(ctx, WebSession{Hash: hash, Kind: SignInLink, User: user, CreatedAt: now, ExpiresAt: expires}); err != nil {
			return err
		}
		return tx.Audit(ctx, AuditEntry{At: now, Actor: a.User, Action: "web.link", Object: "user/" + user})
	})
	if err != nil {
		return "", time.Time{}, err
	}
	return plain, expires, nil
}

// RedeemSignInLink spends a one-time sign-in token and starts a browser
// session for its user. A link works once, within its lifetime.
func (s *Service) RedeemSignInLink(ctx context.Context, link string) (session string, a Actor, expires time.Time, err error) {
	bad := Errorf(CodeUnauthorized, "this sign-in link is not valid: it was used already or expired; ask the bot for a new one with /gpu web")
	if !IsWebToken(link) {
		return "", Actor{}, time.Time{}, bad
	}
	now := s.Now()
	plain, hash := newWebToken()
	expires = now.Add(SessionTTL)
	err = s.store.Update(ctx, func(tx Tx) error {
		l, err := tx.WebSession(ctx, HashToken(link))
		if ErrorCode(err) == CodeNotFound {
			return bad
		}
		if err != nil {
			return err
		}
		if l.Kind != SignInLink || !now.Before(l.ExpiresAt) {
			return bad
		}
		if used, err := tx.UseWebSession(ctx, l.Hash, now); err != nil {
			return err
		} else if !used {
			return bad
		}
		if a, err = actorOf(ctx, tx, l.User); err != nil {
			return err
		}
		if err := tx.InsertWebSession(ctx, WebSession{Hash: hash, Kind: BrowserSession, User: l.User, CreatedAt: now, ExpiresAt: expires}); err != nil {
			return err
		}
		return tx.Audit(ctx, AuditEntry{At: now, Actor: l.User, Action: "web.signin", Object: "user/" + l.User, Detail: "link"})
	})
	if err != nil {
		return "", Actor{}, time.Time{}, err
	}
	return plain, a, expires, nil
}

// StartSession signs a browser in with an API token.
func (s *Service) StartSession(ctx context.Context, apiToken string) (session string, a Actor, expires time.Time, err error) {
	if a, err = s.Authenticate(ctx, strings.TrimSpace(apiToken)); err != nil {
		return "", Actor{}, time.Time{}, err
	}
	now := s.Now()
	plain, hash := newWebToken()
	expires = now.Add(SessionTTL)
	err = s.store.Update(ctx, func(tx Tx) error {
		if err := tx.InsertWebSession(ctx, WebSession{Hash: hash, Kind: BrowserSession, User: a.User, CreatedAt: now, ExpiresAt: expires}); err != nil {
			return err
		}
		return tx.Audit(ctx, AuditEntry{At: now, Actor: a.User, Action: "web.signin", Object: "user/" + a.User, Detail: "token"})
	})
	if err != nil {
		return "", Actor{}, time.Time{}, err
	}
	return plain, a, expires, nil
}

// SessionActor returns the actor a browser session stands for.
func (s *Service) SessionActor(ctx context.Context, session string) (Actor, error) {
	bad := Errorf(CodeUnauthorized, "your web session ended; sign in again")
	if !IsWebToken(session) {
		return Actor{}, bad
	}
	now := s.Now()
	var a Actor
	err := s.store.View(ctx, func(tx Tx) error {
		ws, err := tx.WebSession(ctx, HashToken(session))
		if ErrorCode(err) == CodeNotFound {
			return bad
		}
		if err != nil {
			return err
		}
		if ws.Kind != BrowserSession || !now.Before(ws.ExpiresAt) {
			return bad
		}
		a, err = actorOf(ctx, tx, ws.User)
		return err
	})
	return a, err
}

// EndSession signs a browser out. Ending an unknown session is no error.
func (s *Service) EndSession(ctx context.Context, session string) error {
	if !IsWebToken(session) {
		return nil
	}
	return s.store.Update(ctx, func(tx Tx) error { return tx.DeleteWebSession(ctx, HashToken(session)) })
}

// PruneWebSessions forgets sessions and links that expired a day ago or more.
func (s *Service) PruneWebSessions(ctx context.Context) (int64, error) {
	var n int64
	err := s.store.Update(ctx, func(tx Tx) (err error) {
		n, err = tx.PruneWebSessions(ctx, s.Now().Add(-24*time.Hour))
		return err
	})
	return n, err
}
