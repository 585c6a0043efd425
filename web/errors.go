package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/gpucal/gpucal/core"
)

// maxBody bounds request bodies; the largest legitimate one (a node with 64
// GPUs) is a few kilobytes.
const maxBody = 256 << 10

// errBadRequest marks request errors found before the domain sees the
// request (malformed JSON, unknown fields): they answer 400, while the
// domain's own CodeInvalid answers 422.
type badRequest struct{ msg string }

func (e badRequest) Error() string { return e.msg }

// status maps an error to its HTTP status: the one place that does.
func status(err error) int {
	if errors.As(err, new(badRequest)) {
		return http.StatusBadRequest
	}
	switch core.ErrorCode(err) {
	case core.CodeInvalid:
		return http.StatusUnprocessableEntity
	case core.CodeConflict:
		return http.StatusConflict
	case core.CodeNotFound:
		return http.StatusNotFound
	case core.CodeForbidden:
		return http.StatusForbidden
	case core.CodeUnauthorized:
		return http.StatusUnauthorized
	case core.CodeUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

func writeError(w http.ResponseWriter, err error) {
	code := status(err)
	body := ErrorBody{Error: ErrorDetail{Code: string(core.ErrorCode(err)), Message: core.ErrorMessage(err)}}
	var br badRequest
	if errors.As(err, &br) {
		body.Error.Code, body.Error.Message = string(core.CodeInvalid), br.msg
	}
	var de *core.Error
	if errors.As(err, &de) && de.Conflict != nil {
		body.Error.With, body.Error.Alternatives = de.Conflict.With, de.Conflict.Alternatives
	}
	if code == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="gpucal"`)
	}
	writeJSON(w, code, body)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // the client went away; nothing to do
}

// decode reads a JSON body into v strictly: one object, known fields only,
// at most maxBody bytes.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		var syntax *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.Is(err, io.EOF):
			return badRequest{"the request body is empty; send a JSON object"}
		case errors.As(err, &tooBig):
			return badRequest{fmt.Sprintf("the request body is larger than %d bytes", maxBody)}
		case errors.As(err, &syntax):
			return badRequest{fmt.Sprintf("malformed JSON at byte %d", syntax.Offset)}
		case errors.As(err, &typ):
			return badRequest{fmt.Sprintf("field %q must be a %s", typ.Field, typ.Type)}
		case strings.HasPrefix(err.Error(), "json: unknown field"):
			return badRequest{"unknown field " + strings.TrimPrefix(err.Error(), "json: unknown field ")}
		}
		return badRequest{"malformed JSON: " + err.Error()}
	}
	if dec.More() {
		return badRequest{"the request body must hold exactly one JSON object"}
	}
	return nil
}
