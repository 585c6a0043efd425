package robots

import (
	"bytes"
	"context"
	"encoding/base64"
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
	if err := r.post(ctx, m, r.render(m), nil); err != nil {
		return "", err
	}
	return r.kind, nil
}

// maxImage is the largest image a WeCom robot takes, before base64
// ("图片（base64编码前）最大不能超过2M",
// https://developer.work.weixin.qq.com/document/path/91770).
const maxImage = 2 << 20

// PostFile posts a report to the group: text, and an image (a PNG) where
// the robot can show one. A WeCom robot gets the text, then the image as
// its own message (base64 and MD5); the JSON webhook gets both in one
// message (image_png, base64); Feishu's and DingTalk's custom robots get
// the text alone (their images need an app's upload, or a public URL).
// channel is not used: a robot posts to its one group.
func (r *Robot) PostFile(ctx context.Context, _ string, text, filename string, data []byte) error {
	m := notify.Message{Key: "file/" + filename, Kind: "report", Text: text, At: r.now()}
	var image []byte
	if r.kind == Webhook {
		image = data
	}
	if err := r.post(ctx, m, text, image); err != nil {
		return err
	}
	if r.kind != WeCom || len(data) == 0 {
		return nil
	}
	if len(data) > maxImage {
		return &notify.PermanentError{Err: fmt.Errorf("%s robot %s: %s is %d bytes; WeCom takes images up to %d", r.kind, r.masked, filename, len(data), maxImage)}
	}
	return r.send(ctx, wecomImageBody(data), "", *r.url, "")
}

// post sends m worded as text in the robot's format (the webhook's with
// image, when given).
func (r *Robot) post(ctx context.Context, m notify.Message, text string, image []byte) error {
	now := r.now()
	u := *r.url
	var body any
	var sign string
	switch r.kind {
	case Webhook:
		wb := webhookBody(m, text)
		if len(image) > 0 {
			wb.ImagePNG = base64.StdEncoding.EncodeToString(image)
		}
		body = wb
	case WeCom:
		body = wecomBody(text)
	case Feishu:
		fb := feishuBody(text, r.secret, now)
		body, sign = fb, fb.Sign
	case DingTalk:
		body = dingtalkBody(text)
		if r.secret != "" {
			sign = dingtalkSign(r.secret, now.UnixMilli())
			u.RawQuery = dingtalkQuery(u.RawQuery, r.secret, now)
		}
	}
	return r.send(ctx, body, sign, u, m.Key)
}

// send POSTs body to u and sorts the answer (verdict); sign is the
// request's signature ("" when unsigned), which errors must not show
// either, and key the webhook's Idempotency-Key.
func (r *Robot) send(ctx context.Context, body any, sign string, u url.URL, key string) error {
	b, err := encode(body)
	if err != nil {
		return &notify.PermanentError{Err: fmt.Errorf("%s robot %s: %w", r.kind, r.masked, err)}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(b))
	if err != nil {
		// Its error would show the URL.
		return &notify.PermanentError{Err: fmt.Errorf("%s robot %s: the request could not be built", r.kind, r.masked)}
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("User-Agent", "gpucal")
	if r.kind == Webhook && key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return r.transportError(err, sign)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil && resp.StatusCode/100 == 2 && r.kind != Webhook {
		return r.transportError(err, sign) // the verdict is in the body
	}
	return r.verdict(resp, answer, sign)
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
