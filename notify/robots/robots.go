package robots

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gpucal/gpucal/notify"
)

// The kinds of robot.
const (
	Webhook  = "webhook"
	WeCom    = "wecom"
	Feishu   = "feishu"
	DingTalk = "dingtalk"
)

// kinds lists them in the order messages name them.
var kinds = []string{Webhook, WeCom, Feishu, DingTalk}

// Config is one group robot.
type Config struct {
	Kind string // Webhook, WeCom, Feishu or DingTalk
	// URL is the robot's address, with its key or token: https, except on
	// 127.0.0.1, ::1 or localhost (tests).
	URL string
	// Secret signs each message (Feishu's and DingTalk's "signature"
	// security setting); "" for none. WeCom robots and webhooks are not
	// signed.
	Secret string
	// Render words a message for the group; by default its Text, the
	// event's English sentence.
	Render func(m notify.Message) string
	// Client sends the requests (10 s timeout by default). Redirects are
	// never followed, so the body and URL go nowhere else.
	Client *http.Client
	Now    func() time.Time // the clock for signatures and Retry-After dates
}

// Robot is a notify.Channel that posts to one group.
type Robot struct {
	kind    string
	url     *url.URL
	masked  string   // what errors may show of url
	secrets []string // what errors must never show
	secret  string
	render  func(notify.Message) string
	client  *http.Client
	now     func() time.Time
}

var _ notify.Channel = (*Robot)(nil)

// New returns the robot cfg describes, or why it cannot be one.
func New(cfg Config) (*Robot, error) {
	u, err := validate(cfg)
	if err != nil {
		return nil, err
	}
	r := &Robot{kind: cfg.Kind, url: u, masked: mask(cfg.URL), secret: cfg.Secret, render: cfg.Render, now: cfg.Now}
	if r.render == nil {
		r.render = func(m notify.Message) string { return m.Text }
	}
	if r.now == nil {
		r.now = time.Now
	}
	client := http.Client{Timeout: 10 * time.Second}
	if cfg.Client != nil {
		client = *cfg.Client
	}
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	r.client = &client
	r.secrets = secretParts(u, cfg.Secret)
	return r, nil
}

func validKind(kind string) bool { return slices.Contains(kinds, kind) }

// validate checks cfg and returns its URL parsed. Its errors show the URL
// masked.
func validate(cfg Config) (*url.URL, error) {
	if !validKind(cfg.Kind) {
		return nil, fmt.Errorf("a group robot's kind is one of %s, not %q", strings.Join(kinds, ", "), clip(cfg.Kind, 20))
	}
	where := mask(cfg.URL)
	u, err := url.Parse(cfg.URL)
	if err != nil || u.Host == "" || u.Hostname() == "" {
		return nil, fmt.Errorf("the %s robot's URL %s is not an absolute URL", cfg.Kind, where)
	}
	if local := u.Hostname() == "127.0.0.1" || u.Hostname() == "::1" || u.Hostname() == "localhost"; u.Scheme != "https" && (u.Scheme != "http" || !local) {
		return nil, fmt.Errorf("the %s robot's URL %s must be https (its key travels in it)", cfg.Kind, where)
	}
	q := u.Query()
	switch cfg.Kind {
	case WeCom:
		if q.Get("key") == "" {
			return nil, fmt.Errorf("the wecom robot's URL %s has no key=… (copy the whole webhook address)", where)
		}
	case Feishu:
		if _, token, ok := strings.Cut(u.Path, "/hook/"); !ok || token == "" || strings.Contains(token, "/") {
			return nil, fmt.Errorf("the feishu robot's URL %s does not end in /hook/TOKEN (copy the whole webhook address)", where)
		}
	case DingTalk:
		if q.Get("access_token") == "" {
			return nil, fmt.Errorf("the dingtalk robot's URL %s has no access_token=… (copy the whole webhook address)", where)
		}
		if q.Has("timestamp") || q.Has("sign") {
			return nil, fmt.Errorf("the dingtalk robot's URL %s already has a timestamp or sign: give the secret instead, they are added to each message", where)
		}
	}
	if cfg.Secret != "" && cfg.Kind != Feishu && cfg.Kind != DingTalk {
		return nil, fmt.Errorf("%s robots are not signed: only feishu and dingtalk take a secret", cfg.Kind)
	}
	return u, nil
}

// Send posts m to the robot's group; user is not used. It returns the
// robot's kind as the message's ID: none of them give one back.
func (r *Robot) Send(ctx context.Context, _ string, m notify.Message) (string, error) {
	req, sign, err := r.request(ctx, m)
	if err != nil {
		return "", &notify.PermanentError{Err: fmt.Errorf("%s robot %s: %w", r.kind, r.masked, err)}
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return "", r.transportError(err, sign)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil && resp.StatusCode/100 == 2 && r.kind != Webhook {
		return "", r.transportError(err, sign) // the verdict is in the body
	}
	if err := r.verdict(resp, body, sign); err != nil {
		return "", err
	}
	return r.kind, nil
}

// request builds the POST for m in the robot's wire format, and returns
// its signature too ("" when unsigned), which errors must not show either.
func (r *Robot) request(ctx context.Context, m notify.Message) (*http.Request, string, error) {
	now := r.now()
	u := *r.url
	var body any
	var sign string
	switch r.kind {
	case Webhook:
		body = webhookBody(m, r.render(m))
	case WeCom:
		body = wecomBody(r.render(m))
	case Feishu:
		fb := feishuBody(r.render(m), r.secret, now)
		body, sign = fb, fb.Sign
	case DingTalk:
		body = dingtalkBody(r.render(m))
		if r.secret != "" {
			sign = dingtalkSign(r.secret, now.UnixMilli())
			u.RawQuery = dingtalkQuery(u.RawQuery, r.secret, now)
		}
	}
	b, err := encode(body)
	if err != nil {
		return nil, "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(b))
	if err != nil {
		return nil, "", errors.New("the request could not be built") // its error would show the URL
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("User-Agent", "gpucal")
	if r.kind == Webhook {
		req.Header.Set("Idempotency-Key", m.Key)
	}
	return req, sign, nil
}

// transportError is err (the request never got an answer) without the
// URL, which net/http puts in every error it returns.
func (r *Robot) transportError(err error, sign string) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = &url.Error{Op: ue.Op, URL: r.masked, Err: ue.Err}
	}
	err = fmt.Errorf("%s robot: %w", r.kind, err)
	if msg := r.redact(err.Error(), sign); msg != err.Error() {
		return errors.New(msg)
	}
	return err
}

// redact replaces what may be secret in s (the key, the token, the
// secret, the request's signature) with "…".
func (r *Robot) redact(s, sign string) string {
	if sign != "" {
		s = strings.ReplaceAll(s, url.QueryEscape(sign), "…")
		s = strings.ReplaceAll(s, sign, "…")
	}
	for _, p := range r.secrets {
		s = strings.ReplaceAll(s, p, "…")
	}
	return s
}

// secretParts returns the parts of a robot's URL and secret that errors
// must not show: every query value and every long path segment (a token),
// the longest first. Short ones ("hook", "1") would garble messages and
// hide nothing.
func secretParts(u *url.URL, secret string) []string {
	var out []string
	add := func(s string) {
		if len(s) >= 6 {
			out = append(out, s)
		}
	}
	add(secret)
	for _, vs := range u.Query() {
		for _, v := range vs {
			add(v)
			add(url.QueryEscape(v))
		}
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if len(seg) >= 16 {
			add(seg)
		}
	}
	add(u.User.String())
	// Longest first, so that a part inside another does not leave the
	// rest of the longer one behind.
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}
