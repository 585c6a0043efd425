package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/gpucal/gpucal/core"
)

// streamPing is how often an idle stream sends a comment, so that proxies
// and the browser keep it open.
const streamPing = 25 * time.Second

// handleStream is GET /api/v1/stream: server-sent events, one "change"
// event per change the broker publishes. A browser's EventSource
// reconnects by itself when the stream breaks.
func (s *Server) handleStream(w http.ResponseWriter, r *http.Request, a core.Actor) {
	rc := http.NewResponseController(w)
	// The server's WriteTimeout would cut a stream that lives for hours.
	if err := rc.SetWriteDeadline(time.Time{}); err != nil && err != http.ErrNotSupported {
		s.fail(w, r, err)
		return
	}
	ch, cancel := s.events.Subscribe()
	defer cancel()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 3000\n: connected\n\n")
	if rc.Flush() != nil {
		return
	}
	ping := time.NewTicker(streamPing)
	defer ping.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case c := <-ch:
			data, _ := json.Marshal(c)
			fmt.Fprintf(w, "id: %d\nevent: change\ndata: %s\n\n", c.ID, data)
		case <-ping.C:
			fmt.Fprint(w, ": ping\n\n")
		}
		if rc.Flush() != nil {
			return
		}
	}
}
