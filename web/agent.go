package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gpucal/gpucal/core"
)

// The agent routes (DESIGN §3, decision 4; docs/api.md "Agents"): agents
// join with a join token, then authenticate with their node credential.
// The bodies are core's wire types.

// JoinTokenRequest is the body of POST /api/v1/nodes/join-tokens.
type JoinTokenRequest struct {
	TTL string `json:"ttl,omitempty"` // "24h" unless given
}

// JoinTokenResponse carries a fresh join token; it is shown once.
type JoinTokenResponse struct {
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
}

// JoinResponse answers POST /api/v1/agent/join: the node as the server
// has it and the node's credential, shown once.
type JoinResponse struct {
	Node       Node   `json:"node"`
	Credential string `json:"credential"`
}

// LogSizeHeader carries the size of a job's log on the server: in the
// answer to every log append (accepted or refused for its offset) and
// every log read.
const LogSizeHeader = "Gpucal-Log-Size"

// Headers of a log read besides the size.
const (
	logOffsetHeader  = "Gpucal-Log-Offset"
	logDroppedHeader = "Gpucal-Log-Dropped"
	logDoneHeader    = "Gpucal-Log-Done"
	jobStateHeader   = "Gpucal-Job-State"
)

func (s *Server) agentRoutes() {
	s.mux.Handle("POST /api/v1/agent/join", http.HandlerFunc(s.handleJoin))
	s.mux.Handle("POST /api/v1/agent/heartbeat", s.node(s.handleHeartbeat))
	s.mux.Handle("POST /api/v1/agent/jobs/{id}/log", s.node(s.handleAppendLog))
}

// node resolves a node credential to the node's name.
func (s *Server) node(h func(http.ResponseWriter, *http.Request, string)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cred, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		name, err := s.svc.AuthenticateNode(r.Context(), strings.TrimSpace(cred))
		if err != nil {
			s.fail(w, r, err)
			return
		}
		h(w, r, name)
	})
}

func (s *Server) handleCreateJoinToken(w http.ResponseWriter, r *http.Request, a core.Actor) {
	var req JoinTokenRequest
	if err := decode(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	var ttl time.Duration
	if req.TTL != "" {
		var err error
		if ttl, err = time.ParseDuration(req.TTL); err != nil {
			s.fail(w, r, core.Errorf(core.CodeInvalid, "ttl %q is not a duration like 24h", req.TTL))
			return
		}
	}
	token, expires, err := s.svc.CreateJoinToken(r.Context(), a, ttl)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, JoinTokenResponse{Token: token, ExpiresAt: expires})
}

func (s *Server) handleJoin(w http.ResponseWriter, r *http.Request) {
	token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	var hb core.Heartbeat
	if err := decode(w, r, &hb); err != nil {
		s.fail(w, r, err)
		return
	}
	n, cred, err := s.svc.Join(r.Context(), strings.TrimSpace(token), hb)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.changed()
	writeJSON(w, http.StatusOK, JoinResponse{Node: nodeJSON(n), Credential: cred})
}

func (s *Server) handleHeartbeat(w http.ResponseWriter, r *http.Request, node string) {
	var hb core.Heartbeat
	if err := decode(w, r, &hb); err != nil {
		s.fail(w, r, err)
		return
	}
	ds, err := s.svc.Heartbeat(r.Context(), node, hb)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	for _, j := range hb.Jobs {
		if j.State == core.RunExited || j.State == core.RunRefused {
			s.changed() // GPUs may have come free
			break
		}
	}
	writeJSON(w, http.StatusOK, ds)
}

// maxLogBody bounds one log append's body.
const maxLogBody = 1 << 20

func (s *Server) handleAppendLog(w http.ResponseWriter, r *http.Request, node string) {
	id, err := core.ParseJobID(r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	offset, err := strconv.ParseInt(r.URL.Query().Get("offset"), 10, 64)
	if err != nil {
		s.fail(w, r, badRequest{"offset must be a whole number of bytes"})
		return
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxLogBody))
	if err != nil {
		s.fail(w, r, badRequest{fmt.Sprintf("a log chunk may hold at most %d bytes", maxLogBody)})
		return
	}
	size, err := s.svc.AppendLog(r.Context(), node, id, offset, data)
	w.Header().Set(LogSizeHeader, strconv.FormatInt(size, 10))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int64{"size": size})
}

// handleLog serves a stretch of a job's log as plain bytes, its place in
// headers: GET /api/v1/jobs/{id}/log?offset=N&limit=M.
func (s *Server) handleLog(w http.ResponseWriter, r *http.Request, a core.Actor) {
	id, err := core.ParseJobID(r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	var offset, limit int64
	if v := q.Get("offset"); v != "" {
		if offset, err = strconv.ParseInt(v, 10, 64); err != nil {
			s.fail(w, r, badRequest{"offset must be a whole number of bytes"})
			return
		}
	}
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.ParseInt(v, 10, 64); err != nil {
			s.fail(w, r, badRequest{"limit must be a whole number of bytes"})
			return
		}
	}
	part, err := s.svc.Log(r.Context(), a, id, offset, limit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set(logOffsetHeader, strconv.FormatInt(part.Offset, 10))
	h.Set(LogSizeHeader, strconv.FormatInt(part.Size, 10))
	h.Set(logDroppedHeader, strconv.FormatInt(part.Dropped, 10))
	h.Set(logDoneHeader, strconv.FormatBool(part.Done))
	h.Set(jobStateHeader, string(part.State))
	w.WriteHeader(http.StatusOK)
	w.Write(part.Data)
}

// handleClearFault puts a GPU back in service (admins):
// POST /api/v1/nodes/{name}/gpus/{index}/clear-fault.
func (s *Server) handleClearFault(w http.ResponseWriter, r *http.Request, a core.Actor) {
	index, err := strconv.Atoi(r.PathValue("index"))
	if err != nil {
		s.fail(w, r, badRequest{"the GPU index must be a whole number"})
		return
	}
	g, err := s.svc.ClearFault(r.Context(), a, r.PathValue("name"), index)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.changed()
	writeJSON(w, http.StatusOK, gpuJSON(g))
}

// ClearFault puts GPU index of node back in service (admins).
func (c *Client) ClearFault(ctx context.Context, node string, index int) (GPU, error) {
	var out GPU
	return out, c.do(ctx, http.MethodPost, fmt.Sprintf("/api/v1/nodes/%s/gpus/%d/clear-fault", url.PathEscape(node), index), nil, nil, &out)
}

// CreateJoinToken asks for a join token (admins).
func (c *Client) CreateJoinToken(ctx context.Context, ttl time.Duration) (JoinTokenResponse, error) {
	req := JoinTokenRequest{}
	if ttl > 0 {
		req.TTL = ttl.String()
	}
	var out JoinTokenResponse
	return out, c.do(ctx, http.MethodPost, "/api/v1/nodes/join-tokens", nil, req, &out)
}

// Join exchanges the join token in c.Token for a node credential.
func (c *Client) Join(ctx context.Context, hb core.Heartbeat) (JoinResponse, error) {
	var out JoinResponse
	return out, c.do(ctx, http.MethodPost, "/api/v1/agent/join", nil, hb, &out)
}

// Heartbeat sends a heartbeat with the node credential in c.Token.
func (c *Client) Heartbeat(ctx context.Context, hb core.Heartbeat) (core.DesiredState, error) {
	var out core.DesiredState
	return out, c.do(ctx, http.MethodPost, "/api/v1/agent/heartbeat", nil, hb, &out)
}

// AppendLog sends a stretch of a job's log at offset and returns the size
// the server has after it. When the server refuses the offset, the error
// is an *APIError with code conflict and LogSize set to the server's size.
func (c *Client) AppendLog(ctx context.Context, job, offset int64, data []byte) (int64, error) {
	path := fmt.Sprintf("/api/v1/agent/jobs/%s/log?offset=%d", core.JobName(job), offset)
	resp, body, err := c.send(ctx, http.MethodPost, path, nil, "application/octet-stream", bytes.NewReader(data))
	if err != nil {
		return 0, err
	}
	size, _ := strconv.ParseInt(resp.Header.Get(LogSizeHeader), 10, 64)
	if resp.StatusCode >= 400 {
		e := apiError(resp, body)
		e.LogSize = size
		return 0, e
	}
	return size, nil
}

// LogPart is a stretch of a job's log as GET /api/v1/jobs/{id}/log serves it.
type LogPart struct {
	Offset  int64
	Data    []byte
	Size    int64 // the log's size on the server so far
	Dropped int64 // bytes after Data the server did not keep
	Done    bool  // the job ended and the server has all its log
	State   string
}

// Log reads up to limit bytes (0: the server's most) of a job's log from offset.
func (c *Client) Log(ctx context.Context, id string, offset, limit int64) (LogPart, error) {
	v := url.Values{}
	v.Set("offset", strconv.FormatInt(offset, 10))
	if limit > 0 {
		v.Set("limit", strconv.FormatInt(limit, 10))
	}
	resp, body, err := c.send(ctx, http.MethodGet, "/api/v1/jobs/"+url.PathEscape(id)+"/log?"+v.Encode(), nil, "", nil)
	if err != nil {
		return LogPart{}, err
	}
	if resp.StatusCode >= 400 {
		return LogPart{}, apiError(resp, body)
	}
	h := resp.Header
	p := LogPart{Data: body, State: h.Get(jobStateHeader)}
	p.Offset, _ = strconv.ParseInt(h.Get(logOffsetHeader), 10, 64)
	p.Size, _ = strconv.ParseInt(h.Get(LogSizeHeader), 10, 64)
	p.Dropped, _ = strconv.ParseInt(h.Get(logDroppedHeader), 10, 64)
	p.Done, _ = strconv.ParseBool(h.Get(logDoneHeader))
	return p, nil
}

// send sends one request and returns the response and its body, whatever
// the status.
func (c *Client) send(ctx context.Context, method, path string, h http.Header, contentType string, body io.Reader) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.BaseURL, "/")+path, body)
	if err != nil {
		return nil, nil, fmt.Errorf("building request: %w", err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot reach the gpucal server at %s: %w", c.BaseURL, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, nil, fmt.Errorf("reading the response: %w", err)
	}
	return resp, data, nil
}

// apiError decodes an error answer.
func apiError(resp *http.Response, data []byte) *APIError {
	var eb ErrorBody
	if json.Unmarshal(data, &eb) != nil || eb.Error.Message == "" {
		return &APIError{Status: resp.StatusCode, ErrorDetail: ErrorDetail{Code: string(core.CodeInternal), Message: fmt.Sprintf("server answered %s", resp.Status)}}
	}
	return &APIError{Status: resp.StatusCode, ErrorDetail: eb.Error}
}
