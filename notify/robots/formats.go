package robots

import (
	"bytes"
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/notify"
)

// The longest text each vendor takes, in bytes of UTF-8; longer ones are
// clipped and end in "…". The webhook's receivers are ours to define, so
// its text is not clipped.
const (
	// WeCom: text.content "最长不超过2048个字节"
	// (https://developer.work.weixin.qq.com/document/path/91770).
	wecomMax = 2048
	// Feishu: a custom bot's request body is at most 20 KB
	// (https://open.feishu.cn/document/client-docs/bot-v3/add-custom-bot);
	// the text gets 18,000 bytes of it, leaving room for the envelope, the
	// signature and JSON's escapes.
	feishuMax = 18000
	// DingTalk documents no limit for a text message that we could find
	// (https://open.dingtalk.com/document/orgapp/robot-message-type); it
	// gets Feishu's, which no notice comes near.
	dingtalkMax = 18000
)

// webhookMessage is the generic webhook's body: the delivery's key (also
// sent as the Idempotency-Key header), the event's kind, its job ("j42",
// left out when there is none), the text, the event's instant (RFC 3339,
// UTC) and its fields (core's Data* keys; {} when it has none).
type webhookMessage struct {
	Key   string            `json:"key"`
	Kind  core.EventKind    `json:"kind"`
	Job   string            `json:"job,omitempty"`
	Text  string            `json:"text"`
	At    string            `json:"at"`
	Event map[string]string `json:"event"`
	// ImagePNG is a report's chart, base64: PostFile sends kind "report",
	// key "file/NAME", the text and the chart.
	ImagePNG string `json:"image_png,omitempty"`
}

func webhookBody(m notify.Message, text string) webhookMessage {
	b := webhookMessage{Key: m.Key, Kind: m.Kind, Text: text, At: m.At.UTC().Format(time.RFC3339), Event: m.Event.Data}
	if m.Job != 0 {
		b.Job = core.JobName(m.Job)
	}
	if b.Event == nil {
		b.Event = map[string]string{}
	}
	return b
}

// textMessage is WeCom's and DingTalk's text message, the same on both:
// {"msgtype":"text","text":{"content":…}}
// (https://developer.work.weixin.qq.com/document/path/91770,
// https://open.dingtalk.com/document/orgapp/custom-robot-access).
type textMessage struct {
	MsgType string `json:"msgtype"`
	Text    struct {
		Content string `json:"content"`
	} `json:"text"`
}

func wecomBody(text string) textMessage {
	b := textMessage{MsgType: "text"}
	b.Text.Content = clip(text, wecomMax)
	return b
}

func dingtalkBody(text string) textMessage {
	b := textMessage{MsgType: "text"}
	b.Text.Content = clip(text, dingtalkMax)
	return b
}

// imageMessage is a WeCom robot's image message:
// {"msgtype":"image","image":{"base64":…,"md5":…}}, the MD5 of the image
// before base64, in hex (https://developer.work.weixin.qq.com/document/path/91770, "图片类型").
type imageMessage struct {
	MsgType string `json:"msgtype"`
	Image   struct {
		Base64 string `json:"base64"`
		MD5    string `json:"md5"`
	} `json:"image"`
}

func wecomImageBody(png []byte) imageMessage {
	b := imageMessage{MsgType: "image"}
	sum := md5.Sum(png)
	b.Image.Base64 = base64.StdEncoding.EncodeToString(png)
	b.Image.MD5 = hex.EncodeToString(sum[:])
	return b
}

// feishuMessage is a Feishu custom bot's text message,
// {"msg_type":"text","content":{"text":…}}, with the signature in the body
// when the bot has one
// (https://open.feishu.cn/document/client-docs/bot-v3/add-custom-bot).
type feishuMessage struct {
	MsgType string `json:"msg_type"`
	Content struct {
		Text string `json:"text"`
	} `json:"content"`
	Timestamp string `json:"timestamp,omitempty"` // seconds
	Sign      string `json:"sign,omitempty"`
}

func feishuBody(text, secret string, now time.Time) feishuMessage {
	b := feishuMessage{MsgType: "text"}
	b.Content.Text = clip(text, feishuMax)
	if secret != "" {
		b.Timestamp = strconv.FormatInt(now.Unix(), 10)
		b.Sign = feishuSign(secret, now.Unix())
	}
	return b
}

// feishuSign is Feishu's signature: "timestamp + "\n" + 密钥" is the KEY of
// an HMAC-SHA256 over an empty message, in base64; timestamp in seconds,
// within an hour of Feishu's clock
// (https://open.feishu.cn/document/client-docs/bot-v3/add-custom-bot,
// "签名校验"). It is DingTalk's the other way round.
func feishuSign(secret string, unix int64) string {
	h := hmac.New(sha256.New, []byte(strconv.FormatInt(unix, 10)+"\n"+secret))
	return base64.StdEncoding.EncodeToString(h.Sum(nil))
}

// dingtalkSign is DingTalk's signature: the secret is the key of an
// HMAC-SHA256 over "timestamp + "\n" + secret", in base64; timestamp in
// milliseconds, within an hour of DingTalk's clock
// (https://open.dingtalk.com/document/orgapp/custom-robot-access,
// "加签"). It goes in the URL, so it is URL-encoded there.
func dingtalkSign(secret string, unixMilli int64) string {
	h := hmac.New(sha256.New, []byte(secret))
	h.Write([]byte(strconv.FormatInt(unixMilli, 10) + "\n" + secret))
	return base64.StdEncoding.EncodeToString(h.Sum(nil))
}

// dingtalkQuery is the robot URL's query with &timestamp=…&sign=… added.
func dingtalkQuery(rawQuery, secret string, now time.Time) string {
	ms := now.UnixMilli()
	q := "timestamp=" + strconv.FormatInt(ms, 10) + "&sign=" + url.QueryEscape(dingtalkSign(secret, ms))
	if rawQuery == "" {
		return q
	}
	return rawQuery + "&" + q
}

// encode is v as JSON, with <, > and & left as they are (the vendors show
// the text, not HTML).
func encode(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// clip returns s cut to at most limit bytes (at least 3), on a character
// boundary, ending in "…" when it was cut.
func clip(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	const ellipsis = "…"
	cut := limit - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}
