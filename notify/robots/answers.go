package robots

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gpucal/gpucal/notify"
)

// outcome is what a vendor's error code asks of the dispatcher.
type outcome struct {
	wait      time.Duration // > 0: a rate limit, try again after wait
	permanent bool          // retrying cannot fix it: give up
}

// vendorCodes are the error codes whose meaning is documented; any other
// is retried with backoff (or given up at once when it came with a 4xx).
var vendorCodes = map[string]map[int]outcome{
	// https://developer.work.weixin.qq.com/document/path/91770 (20 messages
	// a minute per robot) and the global codes,
	// https://developer.work.weixin.qq.com/document/path/90313.
	WeCom: {
		45009: {wait: time.Minute}, // 接口调用超过限制: the minute's 20 are used
		93000: {permanent: true},   // invalid webhook url: the robot was removed or the key is wrong
	},
	// https://open.feishu.cn/document/client-docs/bot-v3/add-custom-bot
	// (100 messages a minute and 5 a second per bot). 9499 is sorted by its
	// message in feishuOutcome.
	Feishu: {
		11232: {wait: time.Minute}, // the message service's rate limit
		19001: {permanent: true},   // incoming webhook access token invalid
		19021: {permanent: true},   // sign match fail or timestamp is not within one hour
		19022: {permanent: true},   // IP not allowed
		19024: {permanent: true},   // key words not found
	},
	// https://open.dingtalk.com/document/orgapp/custom-robot-access: 20
	// messages a minute; past that the robot is throttled for 10 minutes.
	DingTalk: {
		130101: {wait: 10 * time.Minute}, // send too fast
		310000: {permanent: true},        // keywords not in content, sign not match, IP not in whitelist
	},
}

// feishuOutcome sorts Feishu's code 9499, which is both "too many request"
// and "Bad Request": the first waits a minute, the second is taken as an
// unknown code (given up at once with a 4xx, else retried with backoff).
func feishuOutcome(code int, msg string) (outcome, bool) {
	if code == 9499 {
		if strings.Contains(strings.ToLower(msg), "too many") {
			return outcome{wait: time.Minute}, true
		}
		return outcome{}, false
	}
	o, ok := vendorCodes[Feishu][code]
	return o, ok
}

// answer is the part of a robot's reply that says how it went: WeCom and
// DingTalk answer {"errcode":0,"errmsg":"ok"}, Feishu {"code":0,"msg":…}
// or, from older bots, {"StatusCode":0,"StatusMessage":"success"}.
type answer struct {
	ErrCode       *int   `json:"errcode"`
	ErrMsg        string `json:"errmsg"`
	Code          *int   `json:"code"`
	Msg           string `json:"msg"`
	StatusCode    *int   `json:"StatusCode"`
	StatusMessage string `json:"StatusMessage"`
}

// vendorCode reads a vendor's code and message from body; ok is false
// when body has none.
func vendorCode(kind string, body []byte) (code int, msg string, ok bool) {
	var a answer
	if json.Unmarshal(body, &a) != nil {
		return 0, "", false
	}
	switch {
	case kind == Feishu && a.Code != nil:
		return *a.Code, a.Msg, true
	case kind == Feishu && a.StatusCode != nil:
		return *a.StatusCode, a.StatusMessage, true
	case kind != Feishu && a.ErrCode != nil:
		return *a.ErrCode, a.ErrMsg, true
	}
	return 0, "", false
}

// verdict sorts the robot's answer to a request signed with sign into nil (posted) or an error of the
// kind notify acts on: rate limits first (HTTP 429, then the vendor's
// codes), then the vendor's refusals, then HTTP's classes (3xx and 4xx
// permanent, 5xx retried).
func (r *Robot) verdict(resp *http.Response, body []byte, sign string) error {
	status := resp.StatusCode
	fail := func(format string, args ...any) error {
		return errors.New(r.redact(fmt.Sprintf("%s robot %s: ", r.kind, r.masked)+fmt.Sprintf(format, args...), sign))
	}
	if status == http.StatusTooManyRequests {
		return &notify.RetryAfterError{Wait: retryAfter(resp.Header.Get("Retry-After"), r.now()), Err: fail("HTTP 429 (too many requests)")}
	}
	if status >= 500 {
		return fail("HTTP %d", status)
	}
	if r.kind != Webhook {
		code, msg, ok := vendorCode(r.kind, body)
		switch {
		case ok && code == 0 && status/100 == 2:
			return nil
		case ok && code != 0:
			// Redacted before it is clipped: a clipped secret would not be
			// found.
			return r.refused(status, code, r.redact(msg, sign), fail)
		case status/100 == 2:
			return fail("HTTP %d without a code in the answer", status)
		}
	}
	switch status / 100 {
	case 2:
		return nil
	case 3:
		return &notify.PermanentError{Err: fail("HTTP %d: redirects are not followed; give the robot's final URL", status)}
	case 4:
		return &notify.PermanentError{Err: fail("HTTP %d", status)}
	}
	return fail("HTTP %d", status)
}

// refused is the error for a vendor's non-zero code.
func (r *Robot) refused(status, code int, msg string, fail func(string, ...any) error) error {
	name := "errcode"
	o, known := vendorCodes[r.kind][code]
	if r.kind == Feishu {
		name = "code"
		o, known = feishuOutcome(code, msg)
	}
	err := fail("%s %d: %s", name, code, clip(msg, 200))
	switch {
	case o.wait > 0:
		return &notify.RetryAfterError{Wait: o.wait, Err: err}
	case o.permanent, !known && status/100 == 4:
		return &notify.PermanentError{Err: err}
	}
	return err
}

// retryAfter reads a Retry-After header (seconds or an HTTP date), at most
// an hour (the dispatcher's longest backoff); a minute when there is none
// or it does not parse, as the robots count their limits by the minute.
func retryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	var wait time.Duration
	if secs, err := strconv.ParseInt(h, 10, 64); err == nil && secs >= 0 {
		wait = time.Duration(min(secs, 3600)) * time.Second
	} else if t, err := http.ParseTime(h); err == nil {
		wait = t.Sub(now)
	} else {
		return time.Minute
	}
	return min(max(wait, time.Second), time.Hour)
}
