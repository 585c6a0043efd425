package web

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"time"
	"unicode"

	"github.com/gpucal/gpucal/core"
)

// staleAfter is how long a first request may be in flight before a retry
// with the same key may take over (its server probably died). Bookings stay
// exactly-once even then: core.Book finds the reservation by its key.
const staleAfter = time.Minute

// idempotent runs h at most once per (user, Idempotency-Key), following the
// IETF draft: a retry of a finished request gets the first response again; a
// retry while the first is in flight gets 409; the same key with a different
// request gets 422. Responses with a 5xx status are not kept, so a retry runs
// again.
func (s *Server) idempotent(w http.ResponseWriter, r *http.Request, a core.Actor, h func(http.ResponseWriter, *http.Request, core.Actor)) {
	key := r.Header.Get("Idempotency-Key")
	if len(key) > 200 || !printable(key) {
		writeError(w, badRequest{"Idempotency-Key must be at most 200 printable ASCII characters"})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeError(w, badRequest{"the request body is larger than the limit"})
		return
	}
	sum := sha256.New()
	io.WriteString(sum, r.Method+" "+r.URL.Path+"\n")
	sum.Write(body)
	rec := core.IdempotencyRecord{User: a.User, Key: key, Fingerprint: hex.EncodeToString(sum.Sum(nil)), CreatedAt: time.Now().UTC()}

	existing, claimed, err := s.keys.ClaimKey(r.Context(), rec, rec.CreatedAt.Add(-staleAfter))
	switch {
	case err != nil:
		s.fail(w, r, err)
		return
	case !claimed && existing.Fingerprint != rec.Fingerprint:
		writeError(w, core.Errorf(core.CodeInvalid, "this Idempotency-Key was used for a different request"))
		return
	case !claimed && existing.Status == 0:
		writeError(w, core.Errorf(core.CodeConflict, "a request with this Idempotency-Key is still in progress; retry shortly"))
		return
	case !claimed:
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Idempotent-Replayed", "true")
		w.WriteHeader(existing.Status)
		w.Write(existing.Body)
		return
	}

	r.Body = io.NopCloser(bytes.NewReader(body))
	buf := &bufferedResponse{header: http.Header{}, status: http.StatusOK}
	// The outcome is recorded even when the client has gone meanwhile, and
	// however slow the database is, until the claim goes stale: a change
	// made but not recorded would run again on a retry after that.
	keep, cancel := context.WithDeadline(context.WithoutCancel(r.Context()), rec.CreatedAt.Add(staleAfter))
	defer cancel()
	completed := false
	defer func() {
		if !completed { // the handler panicked: let a retry run again
			s.keys.ReleaseKey(keep, a.User, key)
		}
	}()
	h(buf, r, a)
	completed = true
	if buf.status >= 500 {
		if err := s.keys.ReleaseKey(keep, a.User, key); err != nil {
			s.log.Error("releasing idempotency key", "user", a.User, "err", err)
		}
	} else if err := s.keys.CompleteKey(keep, a.User, key, buf.status, buf.body.Bytes()); err != nil {
		s.log.Error("storing idempotent response", "user", a.User, "err", err)
	}
	for k, v := range buf.header {
		w.Header()[k] = v
	}
	w.WriteHeader(buf.status)
	w.Write(buf.body.Bytes())
}

// bufferedResponse holds a handler's response until it has been stored.
type bufferedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
	wrote  bool
}

func (b *bufferedResponse) Header() http.Header { return b.header }

func (b *bufferedResponse) WriteHeader(code int) {
	if !b.wrote {
		b.status, b.wrote = code, true
	}
}

func (b *bufferedResponse) Write(p []byte) (int, error) {
	b.wrote = true
	return b.body.Write(p)
}

func printable(s string) bool {
	for _, r := range s {
		if r > unicode.MaxASCII || !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}
