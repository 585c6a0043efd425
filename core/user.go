package core

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"time"
)

// User is a person (or a bot acting for people) known to gpucal.
type User struct {
	Name      string
	Admin     bool   // site admin: may change anything
	Email     string // for notifications by email; "" for none
	CreatedAt time.Time
}

// Role is a user's role in a project.
type Role string

const (
	RoleMember Role = "member"
	RoleAdmin  Role = "admin" // may change every reservation of the project
)

// Project groups users for fair share and for delegated administration.
type Project struct {
	Name      string
	Members   []Member
	CreatedAt time.Time
}

// Member is a user's membership in a project.
type Member struct {
	User string
	Role Role
}

// Actor is the authenticated caller of a Service method.
type Actor struct {
	User  string
	Admin bool
	Roles map[string]Role // project name → role
}

// System is the actor for changes gpucal makes by itself (seeding, start-up).
var System = Actor{User: "gpucal", Admin: true}

// canChange reports whether a may change r: its owner, an admin of its
// project, or a site admin. Everything else is denied.
func (a Actor) canChange(r Reservation) bool {
	return a.Admin || a.User == r.Owner || (r.Project != "" && a.Roles[r.Project] == RoleAdmin)
}

var userName = regexp.MustCompile(`^[a-z0-9][a-z0-9._@-]{0,63}$`)

// ValidName checks a user or project name: lower-case letters, digits and
// ". _ @ -", starting with a letter or digit, at most 64 characters.
func ValidName(kind, name string) error {
	if !userName.MatchString(name) {
		return Errorf(CodeInvalid, "%s name %q must be lower-case letters, digits, '.', '_', '@' or '-', at most 64 characters", kind, name)
	}
	return nil
}

// Token is a personal API token. Only its hash is stored.
type Token struct {
	ID        int64
	User      string
	Name      string
	Hash      string
	CreatedAt time.Time
}

// tokenPrefix marks gpucal tokens so that secret scanners can find leaked ones.
const tokenPrefix = "gpucal_"

// NewToken returns a fresh random token and its hash.
func NewToken() (plain, hash string) {
	b := make([]byte, 24)
	rand.Read(b) // never fails on supported platforms (crypto/rand docs)
	plain = tokenPrefix + hex.EncodeToString(b)
	return plain, HashToken(plain)
}

// HashToken returns the stored form of a token. Tokens carry 192 random
// bits, so a plain SHA-256 (no salt, no stretching) is enough and lets the
// hash be looked up directly.
func HashToken(plain string) string {
	h := sha256.Sum256([]byte(plain))
	return hex.EncodeToString(h[:])
}

// AuditEntry records one change: who did what to which object, and when.
type AuditEntry struct {
	ID     int64
	At     time.Time
	Actor  string
	Action string // "reservation.book", "node.add", …
	Object string // "r42", "node/a100-1", "user/alice"
	Detail string // a short human-readable summary
}
