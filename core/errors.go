package core

import (
	"errors"
	"fmt"
)

// Code classifies an error for the edges: web maps it to an HTTP status and
// the chat bots to a polite reply, each in one place.
type Code string

const (
	CodeInvalid      Code = "invalid"      // the request is wrong; retrying it unchanged will not help
	CodeConflict     Code = "conflict"     // the request clashes with the current state (a booking, a key)
	CodeNotFound     Code = "not_found"    // the named thing does not exist
	CodeForbidden    Code = "forbidden"    // the caller is known but may not do this
	CodeUnauthorized Code = "unauthorized" // the caller is not known
	CodeUnavailable  Code = "unavailable"  // a dependency failed; retrying later may help
	CodeInternal     Code = "internal"     // a bug or an unexpected failure
)

// Error is a domain error: a code, a message meant for the person who made
// the request, and for conflicts the details that let them pick another slot.
type Error struct {
	Code     Code
	Message  string
	Conflict *ConflictDetail
}

func (e *Error) Error() string { return e.Message }

// ConflictDetail says what a refused booking clashed with and what could be
// booked instead.
type ConflictDetail struct {
	With         []ReservationRef `json:"with"`
	Alternatives []Alternative    `json:"alternatives"`
}

// Errorf returns a domain error with the given code.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first domain error in err's chain,
// CodeInternal for any other non-nil error, and "" for nil.
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// ErrorMessage returns the user-facing message of err: the domain message,
// or a generic sentence for internal errors so that no detail leaks.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}
