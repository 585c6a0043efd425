package core

import (
	"context"
	"fmt"
	"net/mail"
	"strings"
	"time"
	"unicode"
)

// ChatIdentity is a person on a chat platform: the platform ("slack",
// "discord"), the workspace or guild, and the platform's ID for the person.
type ChatIdentity struct {
	Platform string
	Team     string
	ID       string
}

func (c ChatIdentity) String() string { return c.Platform + ":" + c.Team + "/" + c.ID }

// ChatProfile is what the platform says about a person. It names the gpucal
// user created on first use and gives the zone replies start in.
type ChatProfile struct {
	Handle string // the platform's user name ("alice", "alice.smith")
	Name   string // the display or real name
	Email  string
	Zone   string // IANA zone, "" when the platform has none (Discord); see ChatUser.Zone
	// Admin says the site configured this person as a gpucal admin (by
	// platform ID or email). It grants admin on first use and later; it
	// never takes admin away.
	Admin bool
}

// ChatUser links a chat identity to the gpucal user it acts as.
type ChatUser struct {
	ChatIdentity
	User string
	// Zone is the zone the person chose with /gpu tz, "" until they do; until
	// then their platform profile's zone (read afresh) applies.
	Zone string
	// Lang is the language the person last wrote /gpu in ("en", "zh"), ""
	// before they did; notifications are worded in it.
	Lang      string
	CreatedAt time.Time
}

// Location returns the zone the person chose, else fallback (their
// profile's zone, or the site's; see ProfileZone).
func (c ChatUser) Location(fallback *time.Location) *time.Location {
	if c.Zone != "" {
		if loc, err := time.LoadLocation(c.Zone); err == nil {
			return loc
		}
	}
	return fallback
}

// ProfileZone returns the zone of a platform profile, or fallback when it
// has none that loads.
func ProfileZone(p ChatProfile, fallback *time.Location) *time.Location {
	if p.Zone != "" && p.Zone != "Local" {
		if loc, err := time.LoadLocation(p.Zone); err == nil {
			return loc
		}
	}
	return fallback
}

// ChatActor returns the actor a chat identity acts as, creating its gpucal
// user on first use: named after the email's local part, else the handle,
// else the platform ID, made a valid user name, and never an existing
// user's name (a Slack "alice" must not become the gpucal "alice" someone
// else may be; an admin links the two with LinkChat).
func (s *Service) ChatActor(ctx context.Context, id ChatIdentity, p ChatProfile) (Actor, ChatUser, error) {
	if id.Platform == "" || id.Team == "" || id.ID == "" {
		return Actor{}, ChatUser{}, Errorf(CodeInvalid, "a chat identity needs a platform, a team and an ID")
	}
	var (
		cu       ChatUser
		a        Actor
		found    bool
		hasEmail bool
	)
	err := s.store.View(ctx, func(tx Tx) error {
		c, err := tx.ChatUser(ctx, id)
		if ErrorCode(err) == CodeNotFound {
			return nil
		} else if err != nil {
			return err
		}
		cu, found = c, true
		u, err := tx.User(ctx, c.User)
		if err != nil {
			return err
		}
		hasEmail = u.Email != ""
		a, err = actorOf(ctx, tx, c.User)
		return err
	})
	// Nothing to write unless the person is new, became an admin, or the
	// platform gives an email address the user lacks.
	if err != nil || (found && (a.Admin || !p.Admin) && (hasEmail || !validEmail(p.Email))) {
		return a, cu, err
	}
	now := s.Now()
	err = s.store.Update(ctx, func(tx Tx) error {
		c, err := tx.ChatUser(ctx, id)
		switch {
		case ErrorCode(err) == CodeNotFound:
			if c, err = s.newChatUser(ctx, tx, id, p, now); err != nil {
				return err
			}
		case err != nil:
			return err
		}
		if err := s.ensureUser(ctx, tx, System, c.User, p.Admin, now); err != nil {
			return err
		}
		if u, err := tx.User(ctx, c.User); err != nil {
			return err
		} else if u.Email == "" && validEmail(p.Email) {
			if err := tx.SetEmail(ctx, c.User, p.Email); err != nil {
				return err
			}
		}
		cu = c
		a, err = actorOf(ctx, tx, c.User)
		return err
	})
	if ErrorCode(err) == CodeConflict && !found {
		// Another request of the same person's first use won; theirs stands.
		return s.ChatActor(ctx, id, ChatProfile{Admin: p.Admin, Zone: p.Zone})
	}
	return a, cu, err
}

// newChatUser creates the gpucal user for a first-time chat identity.
func (s *Service) newChatUser(ctx context.Context, tx Tx, id ChatIdentity, p ChatProfile, now time.Time) (ChatUser, error) {
	base := chatUserName(id, p)
	name := ""
	for i := 1; i <= 100 && name == ""; i++ {
		try := base
		if i > 1 {
			try = fmt.Sprintf("%s-%d", base, i)
		}
		if _, err := tx.User(ctx, try); ErrorCode(err) == CodeNotFound {
			name = try
		} else if err != nil {
			return ChatUser{}, err
		}
	}
	if name == "" {
		return ChatUser{}, Errorf(CodeConflict, "no free user name for %s", id)
	}
	if err := tx.InsertUser(ctx, User{Name: name, Admin: p.Admin, CreatedAt: now}); err != nil {
		return ChatUser{}, err
	}
	c := ChatUser{ChatIdentity: id, User: name, CreatedAt: now}
	if err := tx.InsertChatUser(ctx, c); err != nil {
		return ChatUser{}, err
	}
	return c, tx.Audit(ctx, AuditEntry{At: now, Actor: System.User, Action: "user.add", Object: "user/" + name,
		Detail: fmt.Sprintf("first use from %s (%s), admin=%t", id, p.Name, p.Admin)})
}

// validEmail reports whether s is a bare email address.
func validEmail(s string) bool {
	a, err := mail.ParseAddress(s)
	return err == nil && a.Address == s && len(s) <= 254
}

// chatUserName makes a valid user name from what the platform says.
func chatUserName(id ChatIdentity, p ChatProfile) string {
	local, _, _ := strings.Cut(p.Email, "@")
	for _, s := range []string{local, p.Handle, id.Platform + "-" + id.ID} {
		var b strings.Builder
		for _, r := range strings.ToLower(s) {
			switch {
			case r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)), r == '.', r == '_', r == '-':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		n := strings.Trim(b.String(), "._-")
		if len(n) > 56 { // room for a "-NN" suffix
			n = n[:56]
		}
		if n != "" && ValidName("user", n) == nil {
			return n
		}
	}
	return "chat-user"
}

// actorOf loads a user's actor: admin flag and project roles.
func actorOf(ctx context.Context, tx Tx, user string) (Actor, error) {
	u, err := tx.User(ctx, user)
	if err != nil {
		return Actor{}, err
	}
	roles, err := tx.Roles(ctx, user)
	return Actor{User: u.Name, Admin: u.Admin, Roles: roles}, err
}

// SetChatZone sets the zone a chat user's replies and times use (/gpu tz).
func (s *Service) SetChatZone(ctx context.Context, id ChatIdentity, zone string) (ChatUser, error) {
	loc, err := time.LoadLocation(zone)
	if err != nil || zone == "" || zone == "Local" {
		return ChatUser{}, Errorf(CodeInvalid, "%q is not a time zone; use a name like Europe/Berlin, Asia/Shanghai or America/New_York", zone)
	}
	var out ChatUser
	err = s.store.Update(ctx, func(tx Tx) error {
		c, err := tx.ChatUser(ctx, id)
		if err != nil {
			return err
		}
		c.Zone = loc.String()
		if err := tx.SetChatZone(ctx, id, c.Zone); err != nil {
			return err
		}
		out = c
		return nil
	})
	return out, err
}

// SetChatLang records the language a chat user last wrote in, when it
// changed; notifications to them are worded in it.
func (s *Service) SetChatLang(ctx context.Context, id ChatIdentity, lang string) error {
	if lang != "en" && lang != "zh" {
		return Errorf(CodeInvalid, "language %q: use en or zh", lang)
	}
	return s.store.Update(ctx, func(tx Tx) error {
		c, err := tx.ChatUser(ctx, id)
		if err != nil || c.Lang == lang {
			return err
		}
		return tx.SetChatLang(ctx, id, lang)
	})
}

// LinkChat makes a chat identity act as an existing gpucal user (admins
// only): for the person who used the CLI before they used chat.
func (s *Service) LinkChat(ctx context.Context, a Actor, id ChatIdentity, user string) (ChatUser, error) {
	if !a.Admin {
		return ChatUser{}, Errorf(CodeForbidden, "only admins may link chat identities to users")
	}
	if id.Platform != "slack" && id.Platform != "discord" {
		return ChatUser{}, Errorf(CodeInvalid, "chat platform %q: use slack or discord", id.Platform)
	}
	if id.Team == "" || id.ID == "" || len(id.Team) > 64 || len(id.ID) > 64 {
		return ChatUser{}, Errorf(CodeInvalid, "a chat identity needs a team (workspace or server) ID and a user ID")
	}
	now := s.Now()
	var out ChatUser
	err := s.store.Update(ctx, func(tx Tx) error {
		if _, err := tx.User(ctx, user); err != nil {
			return err
		}
		c, err := tx.ChatUser(ctx, id)
		switch {
		case ErrorCode(err) == CodeNotFound:
			c = ChatUser{ChatIdentity: id, CreatedAt: now}
			c.User = user
			err = tx.InsertChatUser(ctx, c)
		case err == nil:
			c.User = user
			err = tx.SetChatUser(ctx, id, user)
		}
		if err != nil {
			return err
		}
		out = c
		return tx.Audit(ctx, AuditEntry{At: now, Actor: a.User, Action: "user.link", Object: "user/" + user, Detail: id.String()})
	})
	return out, err
}

// ChatLinks lists the chat identities linked to user, for the user
// themself or an admin.
func (s *Service) ChatLinks(ctx context.Context, a Actor, user string) ([]ChatUser, error) {
	if !a.Admin && a.User != user {
		return nil, Errorf(CodeForbidden, "only admins may see someone else's chat identities")
	}
	var cs []ChatUser
	err := s.store.View(ctx, func(tx Tx) error {
		if _, err := tx.User(ctx, user); err != nil {
			return err
		}
		var err error
		cs, err = tx.ChatUsersOf(ctx, user)
		return err
	})
	return cs, err
}

// ChatKnown reports whether a chat identity is linked to a user already.
func (s *Service) ChatKnown(ctx context.Context, id ChatIdentity) (bool, error) {
	var known bool
	err := s.store.View(ctx, func(tx Tx) error {
		_, err := tx.ChatUser(ctx, id)
		if ErrorCode(err) == CodeNotFound {
			return nil
		}
		known = err == nil
		return err
	})
	return known, err
}

// ChatUsers lists the chat identities linked to user, for direct messages.
func (s *Service) ChatUsers(ctx context.Context, user string) ([]ChatUser, error) {
	var cs []ChatUser
	err := s.store.View(ctx, func(tx Tx) (err error) { cs, err = tx.ChatUsersOf(ctx, user); return err })
	return cs, err
}
