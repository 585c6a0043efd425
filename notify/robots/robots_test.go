package robots

import (
	"context"
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/notify"
)

// The signing examples. Neither vendor's documentation gives a worked
// example with a fixed timestamp, secret and resulting sign, so the tests
// take the example values the documentation does give (Feishu's example
// timestamp 1599360473, "例如，1599360473", at
// https://open.feishu.cn/document/client-docs/bot-v3/add-custom-bot;
// DingTalk's sample secret "this is secret" at
// https://open.dingtalk.com/document/orgapp/custom-robot-access, with the
// same instant in milliseconds) and pin the signs that the vendors' own
// Python samples on those pages print for them (Python 3 hmac/base64/
// urllib.parse.quote_plus), checked again with
// `openssl dgst -sha256 -hmac … -binary | base64`. TestSignatures also
// recomputes them from the documented formulas with crypto/hmac.
const (
	feishuExampleUnix   = 1599360473
	feishuExampleSecret = "demo-feishu-secret"
	// python3: key = f'{timestamp}\n{secret}'; hmac.new(key.encode(), b"", sha256) → base64
	feishuExampleSign = "I14G+BylJBIS1VqI4nUg1mKqMAjMGZlFJGT36IJRUr8="

	dingtalkExampleMilli  = 1599360473000
	dingtalkExampleSecret = "this is secret"
	// python3: hmac.new(secret, f'{timestamp}\n{secret}', sha256) → base64 → quote_plus
	dingtalkExampleSign      = "hXZTWifRGHclNuZSKxoXc//sh51SWfVfRIhcdeKs63I="
	dingtalkExampleSignInURL = "hXZTWifRGHclNuZSKxoXc%2F%2Fsh51SWfVfRIhcdeKs63I%3D"
)

var exampleNow = time.Unix(feishuExampleUnix, 0).UTC()

func TestSignatures(t *testing.T) {
	t.Run("feishu", func(t *testing.T) {
		if got := feishuSign(feishuExampleSecret, feishuExampleUnix); got != feishuExampleSign {
			t.Errorf("feishuSign = %q, want %q (Feishu's Python sample)", got, feishuExampleSign)
		}
		// The documented formula: "timestamp + \n + 密钥" is the HMAC key,
		// the message is empty.
		h := hmac.New(sha256.New, []byte("1599360473\n"+feishuExampleSecret))
		if want := base64.StdEncoding.EncodeToString(h.Sum(nil)); want != feishuExampleSign {
			t.Errorf("the formula gives %q, the pinned value is %q", want, feishuExampleSign)
		}
	})
	t.Run("dingtalk", func(t *testing.T) {
		if got := dingtalkSign(dingtalkExampleSecret, dingtalkExampleMilli); got != dingtalkExampleSign {
			t.Errorf("dingtalkSign = %q, want %q (DingTalk's Python sample)", got, dingtalkExampleSign)
		}
		// The documented formula: the secret is the key, the message
		// "timestamp + \n + secret".
		h := hmac.New(sha256.New, []byte(dingtalkExampleSecret))
		h.Write([]byte("1599360473000\n" + dingtalkExampleSecret))
		if want := base64.StdEncoding.EncodeToString(h.Sum(nil)); want != dingtalkExampleSign {
			t.Errorf("the formula gives %q, the pinned value is %q", want, dingtalkExampleSign)
		}
		if got := dingtalkQuery("access_token=T", dingtalkExampleSecret, exampleNow); got != "access_token=T&timestamp=1599360473000&sign="+dingtalkExampleSignInURL {
			t.Errorf("dingtalkQuery = %q", got)
		}
	})
}

// request is what a fake robot received.
type request struct {
	method, path, query string
	header              http.Header
	body                string
}

// fakeRobot is a local server that records requests and answers each
// with status, header and body.
type fakeRobot struct {
	*httptest.Server
	mu   sync.Mutex
	got  []request
	fail func(w http.ResponseWriter) // nil: 200 with answer
}

func newFake(t *testing.T, answer string) *fakeRobot {
	f := &fakeRobot{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.got = append(f.got, request{method: r.Method, path: r.URL.Path, query: r.URL.RawQuery, header: r.Header.Clone(), body: string(b)})
		fail := f.fail
		f.mu.Unlock()
		if fail != nil {
			fail(w)
			return
		}
		io.WriteString(w, answer)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeRobot) requests() []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]request(nil), f.got...)
}

func nodeDown() notify.Message {
	return notify.Message{
		Key:  "node_down/node-4/1764755700/@admins/wecom",
		Kind: core.EventNodeDown,
		Text: "Node node-4 is down: no heartbeat since 17:55. Its jobs were marked failed.",
		At:   time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC),
		Event: core.Event{Kind: core.EventNodeDown, User: core.Admins,
			Data: map[string]string{core.DataNode: "node-4", "since": "2026-12-02T09:55:00Z"}},
	}
}

func TestSend(t *testing.T) {
	finished := notify.Message{
		Key: "finished/42/@admins/webhook", Kind: core.EventFinished, Job: 42, Text: "j42 (llama-ft) succeeded after 2h 41m.",
		At:    time.Date(2026, 12, 2, 18, 0, 0, 0, time.FixedZone("CST", 8*3600)),
		Event: core.Event{Data: map[string]string{core.DataJob: "j42", core.DataName: "llama-ft", core.DataState: "succeeded"}},
	}
	noData := nodeDown()
	noData.Event.Data = nil
	tests := []struct {
		name      string
		kind      string
		path      string // with the query
		secret    string
		render    func(notify.Message) string
		m         notify.Message
		answer    string
		wantPath  string
		wantQuery string
		wantBody  string
		wantKey   string // the Idempotency-Key header
	}{
		{
			name: "webhook", kind: Webhook, path: "/hooks/gpucal", m: finished,
			wantPath: "/hooks/gpucal",
			wantBody: `{"key":"finished/42/@admins/webhook","kind":"finished","job":"j42","text":"j42 (llama-ft) succeeded after 2h 41m.",` +
				`"at":"2026-12-02T10:00:00Z","event":{"job":"j42","name":"llama-ft","state":"succeeded"}}`,
			wantKey: "finished/42/@admins/webhook",
		},
		{
			name: "webhook, an event without a job or fields", kind: Webhook, path: "/hooks/gpucal", m: noData,
			wantPath: "/hooks/gpucal",
			wantBody: `{"key":"node_down/node-4/1764755700/@admins/wecom","kind":"node_down",` +
				`"text":"Node node-4 is down: no heartbeat since 17:55. Its jobs were marked failed.","at":"2026-12-02T10:00:00Z","event":{}}`,
			wantKey: "node_down/node-4/1764755700/@admins/wecom",
		},
		{
			name: "wecom", kind: WeCom, path: "/cgi-bin/webhook/send?key=693a91f6-7xxx-4bc4-97a0-0ec2sifa5aaa", m: nodeDown(),
			answer:   `{"errcode":0,"errmsg":"ok"}`,
			wantPath: "/cgi-bin/webhook/send", wantQuery: "key=693a91f6-7xxx-4bc4-97a0-0ec2sifa5aaa",
			wantBody: `{"msgtype":"text","text":{"content":"Node node-4 is down: no heartbeat since 17:55. Its jobs were marked failed."}}`,
		},
		{
			name: "wecom, worded by Render", kind: WeCom, path: "/cgi-bin/webhook/send?key=K", m: nodeDown(),
			render: func(notify.Message) string {
				return "节点 node-4 已离线：自 17:55 起没有心跳，其上的任务已标记为失败。"
			},
			answer:   `{"errcode":0,"errmsg":"ok"}`,
			wantPath: "/cgi-bin/webhook/send", wantQuery: "key=K",
			wantBody: `{"msgtype":"text","text":{"content":"节点 node-4 已离线：自 17:55 起没有心跳，其上的任务已标记为失败。"}}`,
		},
		{
			name: "feishu", kind: Feishu, path: "/open-apis/bot/v2/hook/5e3d587e-d78e-4a07-bd07-265f269f86fd", m: nodeDown(),
			answer:   `{"code":0,"data":{},"msg":"success"}`,
			wantPath: "/open-apis/bot/v2/hook/5e3d587e-d78e-4a07-bd07-265f269f86fd",
			wantBody: `{"msg_type":"text","content":{"text":"Node node-4 is down: no heartbeat since 17:55. Its jobs were marked failed."}}`,
		},
		{
			name: "feishu, signed", kind: Feishu, path: "/open-apis/bot/v2/hook/5e3d587e", secret: feishuExampleSecret, m: nodeDown(),
			answer:   `{"StatusCode":0,"StatusMessage":"success"}`, // the older bots' answer
			wantPath: "/open-apis/bot/v2/hook/5e3d587e",
			wantBody: `{"msg_type":"text","content":{"text":"Node node-4 is down: no heartbeat since 17:55. Its jobs were marked failed."},` +
				`"timestamp":"1599360473","sign":"` + feishuExampleSign + `"}`,
		},
		{
			name: "dingtalk", kind: DingTalk, path: "/robot/send?access_token=ff6cd723bdb4455fe18", m: nodeDown(),
			answer:   `{"errcode":0,"errmsg":"ok"}`,
			wantPath: "/robot/send", wantQuery: "access_token=ff6cd723bdb4455fe18",
			wantBody: `{"msgtype":"text","text":{"content":"Node node-4 is down: no heartbeat since 17:55. Its jobs were marked failed."}}`,
		},
		{
			name: "dingtalk, signed", kind: DingTalk, path: "/robot/send?access_token=ff6cd723bdb4455fe18", secret: dingtalkExampleSecret, m: nodeDown(),
			answer:   `{"errcode":0,"errmsg":"ok"}`,
			wantPath: "/robot/send", wantQuery: "access_token=ff6cd723bdb4455fe18&timestamp=1599360473000&sign=" + dingtalkExampleSignInURL,
			wantBody: `{"msgtype":"text","text":{"content":"Node node-4 is down: no heartbeat since 17:55. Its jobs were marked failed."}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, tt.answer)
			r, err := New(Config{Kind: tt.kind, URL: f.URL + tt.path, Secret: tt.secret, Render: tt.render, Now: func() time.Time { return exampleNow }})
			if err != nil {
				t.Fatal(err)
			}
			id, err := r.Send(context.Background(), core.Admins, tt.m)
			if err != nil {
				t.Fatalf("Send: %v", err)
			}
			if id != tt.kind {
				t.Errorf("Send returned the ID %q, want %q", id, tt.kind)
			}
			got := f.requests()
			if len(got) != 1 {
				t.Fatalf("the robot got %d requests, want 1", len(got))
			}
			req := got[0]
			if req.method != http.MethodPost || req.path != tt.wantPath || req.query != tt.wantQuery {
				t.Errorf("got %s %s?%s, want POST %s?%s", req.method, req.path, req.query, tt.wantPath, tt.wantQuery)
			}
			if diff := cmp.Diff(tt.wantBody, req.body); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
			if got := req.header.Get("Content-Type"); got != "application/json; charset=utf-8" {
				t.Errorf("Content-Type %q", got)
			}
			if got := req.header.Get("Idempotency-Key"); got != tt.wantKey {
				t.Errorf("Idempotency-Key %q, want %q", got, tt.wantKey)
			}
		})
	}
}

func TestClip(t *testing.T) {
	long := strings.Repeat("节点离线。", 1000) // 15,000 bytes
	tests := []struct {
		kind, path string
		limit      int
	}{
		{WeCom, "/cgi-bin/webhook/send?key=K", wecomMax},
		{Feishu, "/open-apis/bot/v2/hook/T", feishuMax},
		{DingTalk, "/robot/send?access_token=T", dingtalkMax},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			f := newFake(t, `{"errcode":0,"code":0}`)
			text := long
			if tt.limit > len(long) {
				text = strings.Repeat(long, tt.limit/len(long)+1)
			}
			r, err := New(Config{Kind: tt.kind, URL: f.URL + tt.path, Render: func(notify.Message) string { return text }})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.Send(context.Background(), core.Admins, nodeDown()); err != nil {
				t.Fatal(err)
			}
			var body struct {
				Text    struct{ Content string }
				Content struct{ Text string }
			}
			if err := json.Unmarshal([]byte(f.requests()[0].body), &body); err != nil {
				t.Fatal(err)
			}
			got := body.Text.Content + body.Content.Text
			if len(got) > tt.limit || len(got) < tt.limit-6 || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") || !strings.HasPrefix(text, strings.TrimSuffix(got, "…")) {
				t.Errorf("sent %d bytes ending %q; want at most %d, valid UTF-8, a prefix of the text and …", len(got), got[max(0, len(got)-12):], tt.limit)
			}
		})
	}
	if got := clip("short", 10); got != "short" {
		t.Errorf("clip(short) = %q", got)
	}
	if got := clip("abcdefghij", 6); got != "abc…" {
		t.Errorf("clip(abcdefghij, 6) = %q, want abc…", got)
	}
}

// result names what an error asks of the dispatcher.
func result(err error) string {
	var ra *notify.RetryAfterError
	var perm *notify.PermanentError
	switch {
	case err == nil:
		return "sent"
	case errors.As(err, &ra):
		return "wait " + ra.Wait.String()
	case errors.As(err, &perm):
		return "give up"
	}
	return "retry"
}

func TestErrors(t *testing.T) {
	answer := func(status int, header, body string) func(w http.ResponseWriter) {
		return func(w http.ResponseWriter) {
			if k, v, ok := strings.Cut(header, ": "); ok {
				w.Header().Set(k, v)
			}
			w.WriteHeader(status)
			io.WriteString(w, body)
		}
	}
	paths := map[string]string{Webhook: "/hook", WeCom: "/cgi-bin/webhook/send?key=K", Feishu: "/open-apis/bot/v2/hook/T", DingTalk: "/robot/send?access_token=T"}
	tests := []struct {
		name   string
		kind   string
		answer func(w http.ResponseWriter)
		want   string
	}{
		{"wecom rate limit", WeCom, answer(200, "", `{"errcode":45009,"errmsg":"api freq out of limit"}`), "wait 1m0s"},
		{"wecom invalid key", WeCom, answer(200, "", `{"errcode":93000,"errmsg":"invalid webhook url, hint: [1764755700_1_abc]"}`), "give up"},
		{"wecom busy", WeCom, answer(200, "", `{"errcode":-1,"errmsg":"system busy"}`), "retry"},
		{"wecom without a code", WeCom, answer(200, "", `<html>maintenance</html>`), "retry"},
		{"wecom 502", WeCom, answer(502, "", `bad gateway`), "retry"},
		{"feishu bad sign", Feishu, answer(200, "", `{"code":19021,"data":{},"msg":"sign match fail or timestamp is not within one hour from current time"}`), "give up"},
		{"feishu keyword", Feishu, answer(200, "", `{"code":19024,"data":{},"msg":"Key Words Not Found"}`), "give up"},
		{"feishu too many", Feishu, answer(400, "", `{"code":9499,"data":{},"msg":"too many request"}`), "wait 1m0s"},
		{"feishu rate limit", Feishu, answer(200, "", `{"code":11232,"data":{},"msg":"frequency limited psm[lark.oapi.app_platform_runtime]appID[1]"}`), "wait 1m0s"},
		{"feishu bad request", Feishu, answer(400, "", `{"code":9499,"data":{},"msg":"Bad Request"}`), "give up"},
		{"feishu unknown code", Feishu, answer(200, "", `{"code":12345,"msg":"something"}`), "retry"},
		{"dingtalk refused", DingTalk, answer(200, "", `{"errcode":310000,"errmsg":"sign not match, more: [https://ding-doc.dingtalk.com/doc#/serverapi2/qf2nxq]"}`), "give up"},
		{"dingtalk too fast", DingTalk, answer(200, "", `{"errcode":130101,"errmsg":"send too fast, exceed 20 times per minute"}`), "wait 10m0s"},
		{"429 with seconds", Webhook, answer(429, "Retry-After: 17", ``), "wait 17s"},
		{"429 with a date", Webhook, answer(429, "Retry-After: "+exampleNow.Add(90*time.Second).Format(http.TimeFormat), ``), "wait 1m30s"},
		{"429 without Retry-After", DingTalk, answer(429, "", ``), "wait 1m0s"},
		{"429 asking for a day", Webhook, answer(429, "Retry-After: 86400", ``), "wait 1h0m0s"},
		{"500", Webhook, answer(500, "", `oops`), "retry"},
		{"404", Webhook, answer(404, "", `no such hook`), "give up"},
		{"400 with an unknown code", WeCom, answer(400, "", `{"errcode":40008,"errmsg":"invalid message type"}`), "give up"},
		{"redirect", Webhook, answer(307, "Location: https://elsewhere.example/", ``), "give up"},
		{"202", Webhook, answer(202, "", ``), "sent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, "")
			f.fail = tt.answer
			r, err := New(Config{Kind: tt.kind, URL: f.URL + paths[tt.kind], Now: func() time.Time { return exampleNow }})
			if err != nil {
				t.Fatal(err)
			}
			_, err = r.Send(context.Background(), core.Admins, nodeDown())
			if got := result(err); got != tt.want {
				t.Errorf("Send: %v: %s, want %s", err, got, tt.want)
			}
		})
	}
}

func TestNetworkError(t *testing.T) {
	f := newFake(t, "")
	f.Close() // nobody answers
	r, err := New(Config{Kind: WeCom, URL: f.URL + "/cgi-bin/webhook/send?key=K"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Send(context.Background(), core.Admins, nodeDown()); result(err) != "retry" {
		t.Errorf("Send to a closed port: %v (%s), want a plain error (retry)", err, result(err))
	}
}

// TestSecretsMasked checks that no error, from New, the network or the
// robot's answer (even one that echoes the request), shows the key, the
// token or the secret.
func TestSecretsMasked(t *testing.T) {
	const (
		key    = "4f6d2a1b-aaaa-bbbb-cccc-1234567890ab"
		token  = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
		secret = "SECb3b1e0f0d1c2b3a4958677e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7"
	)
	dsign := dingtalkSign(secret, exampleNow.UnixMilli())
	fsign := feishuSign(secret, exampleNow.Unix())
	secrets := []string{key, token, secret, dsign, url.QueryEscape(dsign), fsign,
		key[:8], token[:8], secret[:8], dsign[:8], fsign[:8]} // nor their beginnings
	check := func(t *testing.T, what string, err error) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s: no error", what)
		}
		t.Logf("%s: %v", what, err)
		for _, s := range secrets {
			if strings.Contains(err.Error(), s) {
				t.Errorf("%s: the error shows %q: %v", what, s, err)
			}
		}
	}
	robots := []Config{
		{Kind: WeCom, URL: "/cgi-bin/webhook/send?key=" + key},
		{Kind: Feishu, URL: "/open-apis/bot/v2/hook/" + token, Secret: secret},
		{Kind: DingTalk, URL: "/robot/send?access_token=" + token, Secret: secret},
		{Kind: Webhook, URL: "/hooks/" + token + "?auth=" + key},
	}
	for _, cfg := range robots {
		t.Run(cfg.Kind, func(t *testing.T) {
			// The answer repeats the whole request, as a careless proxy might.
			echo := newFake(t, "")
			echo.fail = func(w http.ResponseWriter) {
				got := echo.requests()
				last := got[len(got)-1]
				w.WriteHeader(400)
				echoed := last.path + "?" + last.query + " " + strings.ReplaceAll(last.body, `"`, `'`)
				io.WriteString(w, `{"errcode":1,"code":1,"errmsg":"bad: `+echoed+`","msg":"bad: `+echoed+`"}`)
			}
			cfg.URL = echo.URL + cfg.URL
			cfg.Now = func() time.Time { return exampleNow }
			cfg.Render = func(notify.Message) string { return "x" } // so that all of it fits in the error
			r, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, err = r.Send(context.Background(), core.Admins, nodeDown())
			check(t, "an answer that echoes the URL", err)

			echo.Close()
			_, err = r.Send(context.Background(), core.Admins, nodeDown())
			check(t, "a closed port", err)
			if !strings.Contains(err.Error(), strings.TrimPrefix(echo.URL, "http://")) {
				t.Errorf("the network error does not name the host: %v", err)
			}

			bad := cfg
			bad.URL = strings.Replace(cfg.URL, "http://127.0.0.1", "http://robots.example", 1)
			_, err = New(bad)
			check(t, "New with an http URL", err)
		})
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"wecom", Config{Kind: WeCom, URL: "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=K"}, true},
		{"feishu signed", Config{Kind: Feishu, URL: "https://open.feishu.cn/open-apis/bot/v2/hook/T", Secret: "S"}, true},
		{"lark", Config{Kind: Feishu, URL: "https://open.larksuite.com/open-apis/bot/v2/hook/T"}, true},
		{"dingtalk signed", Config{Kind: DingTalk, URL: "https://oapi.dingtalk.com/robot/send?access_token=T", Secret: "SEC1"}, true},
		{"webhook", Config{Kind: Webhook, URL: "https://example.org/hook"}, true},
		{"webhook on localhost", Config{Kind: Webhook, URL: "http://localhost:8080/hook"}, true},
		{"webhook on ::1", Config{Kind: Webhook, URL: "http://[::1]:8080/hook"}, true},
		{"unknown kind", Config{Kind: "slack", URL: "https://example.org/hook"}, false},
		{"no kind", Config{URL: "https://example.org/hook"}, false},
		{"http elsewhere", Config{Kind: Webhook, URL: "http://example.org/hook"}, false},
		{"ftp", Config{Kind: Webhook, URL: "ftp://localhost/hook"}, false},
		{"relative", Config{Kind: Webhook, URL: "/hook"}, false},
		{"no host", Config{Kind: Webhook, URL: "https:///hook"}, false},
		{"wecom without key", Config{Kind: WeCom, URL: "https://qyapi.weixin.qq.com/cgi-bin/webhook/send"}, false},
		{"wecom signed", Config{Kind: WeCom, URL: "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=K", Secret: "S"}, false},
		{"webhook signed", Config{Kind: Webhook, URL: "https://example.org/hook", Secret: "S"}, false},
		{"feishu without token", Config{Kind: Feishu, URL: "https://open.feishu.cn/open-apis/bot/v2/hook/"}, false},
		{"feishu elsewhere", Config{Kind: Feishu, URL: "https://open.feishu.cn/open-apis/im/v1/messages"}, false},
		{"dingtalk without token", Config{Kind: DingTalk, URL: "https://oapi.dingtalk.com/robot/send"}, false},
		{"dingtalk already signed", Config{Kind: DingTalk, URL: "https://oapi.dingtalk.com/robot/send?access_token=T&timestamp=1&sign=x"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			if (err == nil) != tt.ok {
				t.Errorf("New: %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func TestMask(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=693a91f6", "https://qyapi.weixin.qq.com/…"},
		{"https://open.feishu.cn/open-apis/bot/v2/hook/5e3d587e", "https://open.feishu.cn/…"},
		{"https://oapi.dingtalk.com/robot/send?access_token=T&timestamp=1&sign=x", "https://oapi.dingtalk.com/…"},
		{"https://user:pass@example.org:8443/", "https://example.org:8443"},
		{"https://example.org", "https://example.org"},
		{"https://example.org?k=v", "https://example.org/…"},
		{"no URL at all", "(a URL, hidden)"},
		{"https://example.org/%zz", "(a URL, hidden)"},
	}
	for _, tt := range tests {
		if got := mask(tt.in); got != tt.want {
			t.Errorf("mask(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// FuzzMask checks that mask keeps nothing past the host: no path, query,
// fragment or user information.
func FuzzMask(f *testing.F) {
	for _, s := range []string{
		"https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=693a91f6",
		"https://open.feishu.cn/open-apis/bot/v2/hook/5e3d587e",
		"https://u:p@h/x#frag", "http://[::1]:80/a?b", "mailto:a@b", "//host/path", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := mask(s)
		if got == "(a URL, hidden)" {
			return
		}
		scheme, rest, ok := strings.Cut(got, "://")
		if !ok || scheme == "" {
			t.Fatalf("mask(%q) = %q: no scheme://", s, got)
		}
		rest = strings.TrimSuffix(rest, "/…")
		if rest == "" || strings.ContainsAny(rest, "/?#@") {
			t.Fatalf("mask(%q) = %q: more than a host", s, got)
		}
		if !strings.Contains(s, rest) && !strings.Contains(strings.ToLower(s), strings.ToLower(rest)) {
			t.Fatalf("mask(%q) = %q: a host that is not in the URL", s, got)
		}
	})
}

// TestPostFile: a report reaches a WeCom group as its text, then the
// chart as an image message (base64, with the MD5 of the bytes); the
// webhook gets both in one message; Feishu and DingTalk the text only.
func TestPostFile(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\nnot really a chart")
	now := func() time.Time { return time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC) }
	for _, c := range []struct {
		kind, path, answer string
		want               []string // the bodies, in order
	}{
		{WeCom, "/cgi-bin/webhook/send?key=K", `{"errcode":0,"errmsg":"ok"}`, []string{
			`{"msgtype":"text","text":{"content":"GPU digest: 39% used."}}`,
			`{"msgtype":"image","image":{"base64":"iVBORw0KGgpub3QgcmVhbGx5IGEgY2hhcnQ=","md5":"` + fmt.Sprintf("%x", md5.Sum(png)) + `"}}`,
		}},
		{Webhook, "/hooks/gpucal", "", []string{
			`{"key":"file/digest.png","kind":"report","text":"GPU digest: 39% used.","at":"2026-12-07T09:00:00Z","event":{},"image_png":"iVBORw0KGgpub3QgcmVhbGx5IGEgY2hhcnQ="}`,
		}},
		{Feishu, "/open-apis/bot/v2/hook/H", `{"code":0,"msg":"success"}`, []string{
			`{"msg_type":"text","content":{"text":"GPU digest: 39% used."}}`,
		}},
		{DingTalk, "/robot/send?access_token=T", `{"errcode":0,"errmsg":"ok"}`, []string{
			`{"msgtype":"text","text":{"content":"GPU digest: 39% used."}}`,
		}},
	} {
		t.Run(c.kind, func(t *testing.T) {
			f := newFake(t, c.answer)
			r, err := New(Config{Kind: c.kind, URL: f.URL + c.path, Now: now})
			if err != nil {
				t.Fatal(err)
			}
			if err := r.PostFile(context.Background(), "", "GPU digest: 39% used.", "digest.png", png); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, req := range f.requests() {
				got = append(got, req.body)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("bodies\n%q\nwant\n%q", got, c.want)
			}
		})
	}
	// An image WeCom would refuse is not sent; the text went.
	f := newFake(t, `{"errcode":0,"errmsg":"ok"}`)
	r, _ := New(Config{Kind: WeCom, URL: f.URL + "/cgi-bin/webhook/send?key=K", Now: now})
	err := r.PostFile(context.Background(), "", "text", "big.png", make([]byte, 3<<20))
	var perm *notify.PermanentError
	if !errors.As(err, &perm) || len(f.requests()) != 1 {
		t.Errorf("a 3 MB image: %v after %d requests; want a permanent error after the text", err, len(f.requests()))
	}
}
