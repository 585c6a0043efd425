package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/gpucal/gpucal/core"
)

// overlapMessage is what the SQLite triggers raise (migrations/sqlite).
const overlapMessage = "gpucal: overlapping GPU slot"

// PostgreSQL error codes (SQLSTATE) that store tells apart.
const (
	pgUniqueViolation      = "23505"
	pgForeignKeyViolation  = "23503"
	pgExclusionViolation   = "23P01"
	pgSerializationFailure = "40001"
	pgDeadlockDetected     = "40P01"
)

// SQLite result codes (sqlite3.h) that store tells apart. Extended codes
// carry the primary code in their low byte.
const (
	sqliteBusy         = 5
	sqliteLocked       = 6
	sqliteIOErr        = 10
	sqliteFull         = 13
	sqliteCantOpen     = 14
	sqliteConstraint   = 19
	sqliteUnique       = sqliteConstraint | 8<<8 // SQLITE_CONSTRAINT_UNIQUE
	sqlitePrimaryKey   = sqliteConstraint | 6<<8 // SQLITE_CONSTRAINT_PRIMARYKEY
	sqliteForeignKey   = sqliteConstraint | 3<<8 // SQLITE_CONSTRAINT_FOREIGNKEY
	sqliteTriggerAbort = sqliteConstraint | 7<<8 // SQLITE_CONSTRAINT_TRIGGER
	sqlitePrimaryMask  = 0xff
)

// sqliteError is what the modernc driver's errors offer.
type sqliteError interface {
	error
	Code() int
}

func pgCode(err error) string {
	var e *pgconn.PgError
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func sqliteCode(err error) int {
	var e sqliteError
	if errors.As(err, &e) {
		return e.Code()
	}
	return 0
}

// lostRace reports whether err means that a concurrent transaction won and
// running the transaction again may succeed.
func lostRace(err error) bool {
	switch pgCode(err) {
	case pgExclusionViolation, pgSerializationFailure, pgDeadlockDetected:
		return true
	}
	var k keyRace
	var h holdRace
	return isOverlap(err) || errors.As(err, &k) || errors.As(err, &h)
}

// isOverlap reports whether err is the database refusing a GPU slot that
// overlaps another.
func isOverlap(err error) bool {
	if pgCode(err) == pgExclusionViolation {
		return true
	}
	return sqliteCode(err) == sqliteTriggerAbort && strings.Contains(err.Error(), overlapMessage)
}

// isUnique reports whether err is a unique or primary key violation.
func isUnique(err error) bool {
	if pgCode(err) == pgUniqueViolation {
		return true
	}
	c := sqliteCode(err)
	return c == sqliteUnique || c == sqlitePrimaryKey
}

// isForeignKey reports whether err is a foreign key violation.
func isForeignKey(err error) bool {
	return pgCode(err) == pgForeignKeyViolation || sqliteCode(err) == sqliteForeignKey
}

// isUnavailable reports whether err means the database could not be
// reached or cannot serve now, as opposed to refusing the query.
func isUnavailable(err error) bool {
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return true
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	if errors.As(err, &ce) || errors.As(err, &ne) {
		return true
	}
	if c := pgCode(err); c != "" {
		// 08: connection exception; 53: insufficient resources; 57P0x:
		// the server is shutting down or starting.
		return strings.HasPrefix(c, "08") || strings.HasPrefix(c, "53") ||
			c == "57P01" || c == "57P02" || c == "57P03"
	}
	switch sqliteCode(err) & sqlitePrimaryMask {
	case sqliteBusy, sqliteLocked, sqliteIOErr, sqliteFull, sqliteCantOpen:
		return true
	}
	return false
}

// dbError turns an error of operation op into what core expects: domain
// errors pass through; an overlapping slot becomes CodeConflict and an
// unreachable database CodeUnavailable, keeping the cause for logs and for
// Update's retry; everything else is wrapped with op.
func dbError(op string, err error) error {
	var de *core.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &de):
		return err
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("store: %s: %w", op, err)
	case isOverlap(err):
		return fmt.Errorf("%w: store: %s: %w",
			core.Errorf(core.CodeConflict, "a GPU of this booking is already booked for part of its window"), op, err)
	case isUnavailable(err):
		return unavailable(op, err)
	}
	return fmt.Errorf("store: %s: %w", op, err)
}

// unavailable wraps err with a CodeUnavailable domain error.
func unavailable(op string, err error) error {
	return fmt.Errorf("%w: store: %s: %w",
		core.Errorf(core.CodeUnavailable, "the database is unavailable; try again later"), op, err)
}

// keyRace marks a reservation refused because a concurrent transaction
// stored one with the same idempotency key: running the booking again
// finds that reservation and returns it.
type keyRace struct{ err error }

func (k keyRace) Error() string { return k.err.Error() }
func (k keyRace) Unwrap() error { return k.err }

// holdRace marks a job refused a GPU because a concurrent transaction gave
// it to another job: running the transaction again sees that job and plans
// around it.
type holdRace struct{ err error }

func (h holdRace) Error() string { return h.err.Error() }
func (h holdRace) Unwrap() error { return h.err }

// notFound returns the CodeNotFound error for a missing thing.
func notFound(format string, args ...any) error {
	return core.Errorf(core.CodeNotFound, format+" not found", args...)
}

// conflict returns the CodeConflict error for a taken unique name.
func conflict(format string, args ...any) error {
	return core.Errorf(core.CodeConflict, format+" already exists", args...)
}
