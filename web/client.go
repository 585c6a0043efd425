package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client calls a gpucal server's API.
type Client struct {
	BaseURL string // "http://127.0.0.1:8080"
	Token   string
	HTTP    *http.Client // nil: a client with a 30 s timeout
}

// APIError is an error response from the server.
type APIError struct {
	Status int
	ErrorDetail
	// LogSize is the server's size of a job's log, on a refused log append.
	LogSize int64
}

func (e *APIError) Error() string { return e.Message }

// Me returns the caller.
func (c *Client) Me(ctx context.Context) (User, error) {
	var u User
	return u, c.do(ctx, http.MethodGet, "/api/v1/me", nil, nil, &u)
}

// Nodes lists the inventory with every GPU's state now.
func (c *Client) Nodes(ctx context.Context) ([]Node, error) {
	var ns []Node
	return ns, c.do(ctx, http.MethodGet, "/api/v1/nodes", nil, nil, &ns)
}

// AddNode adds a node (admins only).
func (c *Client) AddNode(ctx context.Context, n NewNode) (Node, error) {
	var out Node
	return out, c.do(ctx, http.MethodPost, "/api/v1/nodes", nil, n, &out)
}

// Book reserves GPUs. key, when not empty, is sent as the Idempotency-Key so
// that a retried request cannot book twice.
func (c *Client) Book(ctx context.Context, req BookRequest, key string) (Reservation, error) {
	var out Reservation
	h := http.Header{}
	if key != "" {
		h.Set("Idempotency-Key", key)
	}
	return out, c.do(ctx, http.MethodPost, "/api/v1/reservations", h, req, &out)
}

// ReservationQuery filters Reservations.
type ReservationQuery struct {
	Mine     bool
	User     string
	Project  string
	From, To time.Time
	States   []string
	Limit    int
}

// Reservations lists reservations.
func (c *Client) Reservations(ctx context.Context, q ReservationQuery) ([]Reservation, error) {
	v := url.Values{}
	if q.Mine {
		v.Set("mine", "true")
	}
	setNonEmpty(v, "user", q.User)
	setNonEmpty(v, "project", q.Project)
	setTime(v, "from", q.From)
	setTime(v, "to", q.To)
	setNonEmpty(v, "state", strings.Join(q.States, ","))
	if q.Limit > 0 {
		v.Set("limit", fmt.Sprint(q.Limit))
	}
	var out []Reservation
	return out, c.do(ctx, http.MethodGet, "/api/v1/reservations?"+v.Encode(), nil, nil, &out)
}

// Reservation returns one reservation by its ID ("r42").
func (c *Client) Reservation(ctx context.Context, id string) (Reservation, error) {
	var out Reservation
	return out, c.do(ctx, http.MethodGet, "/api/v1/reservations/"+url.PathEscape(id), nil, nil, &out)
}

// Cancel gives a reservation back.
func (c *Client) Cancel(ctx context.Context, id string) (Reservation, error) {
	var out Reservation
	return out, c.do(ctx, http.MethodDelete, "/api/v1/reservations/"+url.PathEscape(id), nil, nil, &out)
}

// Release ends an active reservation now.
func (c *Client) Release(ctx context.Context, id string) (Reservation, error) {
	var out Reservation
	return out, c.do(ctx, http.MethodPost, "/api/v1/reservations/"+url.PathEscape(id)+"/release", nil, struct{}{}, &out)
}

// Extend moves a reservation's end later.
func (c *Client) Extend(ctx context.Context, id string, req ExtendRequest) (Reservation, error) {
	var out Reservation
	return out, c.do(ctx, http.MethodPost, "/api/v1/reservations/"+url.PathEscape(id)+"/extend", nil, req, &out)
}

// CalendarQuery selects a calendar range.
type CalendarQuery struct {
	From, To             time.Time
	User, Project, Model string
}

// Calendar returns the GPUs and what is on them in [From, To).
func (c *Client) Calendar(ctx context.Context, q CalendarQuery) (Calendar, error) {
	v := url.Values{}
	setTime(v, "from", q.From)
	setTime(v, "to", q.To)
	setNonEmpty(v, "user", q.User)
	setNonEmpty(v, "project", q.Project)
	setNonEmpty(v, "model", q.Model)
	var out Calendar
	return out, c.do(ctx, http.MethodGet, "/api/v1/calendar?"+v.Encode(), nil, nil, &out)
}

// Submit queues a job. key, when not empty, is sent as the Idempotency-Key
// so that a retried request cannot queue it twice.
func (c *Client) Submit(ctx context.Context, req SubmitRequest, key string) (Job, error) {
	var out Job
	h := http.Header{}
	if key != "" {
		h.Set("Idempotency-Key", key)
	}
	return out, c.do(ctx, http.MethodPost, "/api/v1/jobs", h, req, &out)
}

// JobQuery filters Jobs.
type JobQuery struct {
	Mine    bool
	User    string
	Project string
	States  []string
	Types   []string
	Limit   int
}

// Jobs lists jobs, newest first.
func (c *Client) Jobs(ctx context.Context, q JobQuery) ([]Job, error) {
	v := url.Values{}
	if q.Mine {
		v.Set("mine", "true")
	}
	setNonEmpty(v, "user", q.User)
	setNonEmpty(v, "project", q.Project)
	setNonEmpty(v, "state", strings.Join(q.States, ","))
	setNonEmpty(v, "type", strings.Join(q.Types, ","))
	if q.Limit > 0 {
		v.Set("limit", fmt.Sprint(q.Limit))
	}
	var out []Job
	return out, c.do(ctx, http.MethodGet, "/api/v1/jobs?"+v.Encode(), nil, nil, &out)
}

// Job returns one job by its ID ("j42").
func (c *Client) Job(ctx context.Context, id string) (Job, error) {
	var out Job
	return out, c.do(ctx, http.MethodGet, "/api/v1/jobs/"+url.PathEscape(id), nil, nil, &out)
}

// CancelJob cancels a job.
func (c *Client) CancelJob(ctx context.Context, id string) (Job, error) {
	var out Job
	return out, c.do(ctx, http.MethodDelete, "/api/v1/jobs/"+url.PathEscape(id), nil, nil, &out)
}

// ReportProgress tells the server how far a running job has come.
func (c *Client) ReportProgress(ctx context.Context, id string, req ProgressRequest) (Job, error) {
	var out Job
	return out, c.do(ctx, http.MethodPost, "/api/v1/jobs/"+url.PathEscape(id)+"/progress", nil, req, &out)
}

// Queue returns the queue with every job's predicted start and end.
func (c *Client) Queue(ctx context.Context) (Queue, error) {
	var out Queue
	return out, c.do(ctx, http.MethodGet, "/api/v1/queue", nil, nil, &out)
}

// WhatIf asks when a job of this shape could start, without changing anything.
func (c *Client) WhatIf(ctx context.Context, req WhatIfRequest) (WhatIfAnswer, error) {
	var out WhatIfAnswer
	return out, c.do(ctx, http.MethodPost, "/api/v1/whatif", nil, req, &out)
}

// Users lists users.
func (c *Client) Users(ctx context.Context) ([]User, error) {
	var out []User
	return out, c.do(ctx, http.MethodGet, "/api/v1/users", nil, nil, &out)
}

// AddUser creates a user (admins only).
func (c *Client) AddUser(ctx context.Context, u User) (User, error) {
	var out User
	return out, c.do(ctx, http.MethodPost, "/api/v1/users", nil, User{Name: u.Name, Admin: u.Admin}, &out)
}

// LinkChat makes a chat identity act as user (admins only).
func (c *Client) LinkChat(ctx context.Context, user string, l ChatLink) (ChatLink, error) {
	var out ChatLink
	return out, c.do(ctx, http.MethodPost, "/api/v1/users/"+url.PathEscape(user)+"/chat-links", nil, l, &out)
}

// ChatLinks lists the chat identities linked to user (the user or an admin).
func (c *Client) ChatLinks(ctx context.Context, user string) ([]ChatLink, error) {
	var out []ChatLink
	return out, c.do(ctx, http.MethodGet, "/api/v1/users/"+url.PathEscape(user)+"/chat-links", nil, nil, &out)
}

// NotifyPrefs returns a user's notification settings (the user or an admin).
func (c *Client) NotifyPrefs(ctx context.Context, user string) (NotifyPrefs, error) {
	var out NotifyPrefs
	return out, c.do(ctx, http.MethodGet, "/api/v1/users/"+url.PathEscape(user)+"/notify-prefs", nil, nil, &out)
}

// SetNotifyPrefs replaces a user's notification settings.
func (c *Client) SetNotifyPrefs(ctx context.Context, user string, p NotifyPrefs) (NotifyPrefs, error) {
	var out NotifyPrefs
	return out, c.do(ctx, http.MethodPut, "/api/v1/users/"+url.PathEscape(user)+"/notify-prefs", nil, p, &out)
}

// Projects lists projects.
func (c *Client) Projects(ctx context.Context) ([]Project, error) {
	var out []Project
	return out, c.do(ctx, http.MethodGet, "/api/v1/projects", nil, nil, &out)
}

// AddProject creates a project (admins only).
func (c *Client) AddProject(ctx context.Context, p Project) (Project, error) {
	var out Project
	return out, c.do(ctx, http.MethodPost, "/api/v1/projects", nil, p, &out)
}

// SetMember adds a user to a project or changes their role.
func (c *Client) SetMember(ctx context.Context, project string, m Member) error {
	return c.do(ctx, http.MethodPost, "/api/v1/projects/"+url.PathEscape(project)+"/members", nil, m, nil)
}

// CreateToken issues an API token.
func (c *Client) CreateToken(ctx context.Context, req TokenRequest) (TokenResponse, error) {
	var out TokenResponse
	return out, c.do(ctx, http.MethodPost, "/api/v1/tokens", nil, req, &out)
}

// Audit reads the audit log (admins only).
func (c *Client) Audit(ctx context.Context, actor, object string, limit int) ([]AuditEntry, error) {
	v := url.Values{}
	setNonEmpty(v, "actor", actor)
	setNonEmpty(v, "object", object)
	if limit > 0 {
		v.Set("limit", fmt.Sprint(limit))
	}
	var out []AuditEntry
	return out, c.do(ctx, http.MethodGet, "/api/v1/audit?"+v.Encode(), nil, nil, &out)
}

// do sends one request and decodes the answer into out, or an *APIError.
func (c *Client) do(ctx context.Context, method, path string, h http.Header, in, out any) error {
	var body io.Reader
	contentType := ""
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encoding request: %w", err)
		}
		body, contentType = bytes.NewReader(b), "application/json"
	}
	resp, data, err := c.send(ctx, method, path, h, contentType, body)
	if err != nil {
		return err
	}
	if resp.StatusCode >= 400 {
		return apiError(resp, data)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decoding the response: %w", err)
	}
	return nil
}

func setNonEmpty(v url.Values, k, s string) {
	if s != "" {
		v.Set(k, s)
	}
}

func setTime(v url.Values, k string, t time.Time) {
	if !t.IsZero() {
		v.Set(k, t.UTC().Format(time.RFC3339))
	}
}
