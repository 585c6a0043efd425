package bot

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gpucal/gpucal/core"
)

// NotifyChange is what "notify" changes in a person's notification
// settings; none of it set shows them.
type NotifyChange struct {
	Mute   []core.EventKind `json:"mute,omitempty"`
	Unmute []core.EventKind `json:"unmute,omitempty"` // core.AnyEvent: everything
	// Quiet is "22:00-08:00" in the person's zone, or "off".
	Quiet string `json:"quiet,omitempty"`
	// Via is the channels a kind of notice goes to (For, or every kind
	// when For is empty); ["default"] drops the choice.
	Via []string       `json:"via,omitempty"`
	For core.EventKind `json:"for,omitempty"`
}

// The words of "notify", in either language.
var (
	notifyMute   = []string{"mute", "静音", "屏蔽", "关闭"}
	notifyUnmute = []string{"unmute", "取消静音", "恢复", "打开"}
	notifyQuiet  = []string{"quiet", "免打扰", "勿扰"}
	notifyVia    = []string{"via", "by", "over", "渠道", "通过", "发到", "用"}
	notifyAll    = []string{"all", "everything", "全部", "所有"}
	notifyOff    = []string{"off", "none", "no", "关", "关闭", "无", "不要"}
	notifyReset  = []string{"default", "reset", "默认"}
	channelWords = map[string]string{
		"slack": "slack", "discord": "discord", "email": core.ChannelEmail, "mail": core.ChannelEmail, "e-mail": core.ChannelEmail,
		"邮件": core.ChannelEmail, "邮箱": core.ChannelEmail, "电子邮件": core.ChannelEmail,
	}
	// kindWords are short and Chinese names for the event kinds one may
	// choose; every kind's own name (docs/notifications.md) works too.
	kindWords = map[string]core.EventKind{
		"start": core.EventStarted, "starts": core.EventStarted, "开始": core.EventStarted, "已开始": core.EventStarted,
		"soon": core.EventStartsSoon, "即将开始": core.EventStartsSoon,
		"slip": core.EventStartMovedLater, "slips": core.EventStartMovedLater, "delay": core.EventStartMovedLater, "推迟": core.EventStartMovedLater, "延后": core.EventStartMovedLater,
		"position": core.EventPositionChanged, "place": core.EventPositionChanged, "排位": core.EventPositionChanged, "排名": core.EventPositionChanged, "位置": core.EventPositionChanged,
		"drain": core.EventWillBeDrained, "让出": core.EventWillBeDrained,
		"finish": core.EventFinished, "end": core.EventFinished, "ended": core.EventFinished, "结束": core.EventFinished, "完成": core.EventFinished,
		"reminder": core.EventReservationSoon, "reservation": core.EventReservationSoon, "提醒": core.EventReservationSoon,
		"summary": core.EventDailySummary, "日报": core.EventDailySummary,
	}
)

// notify reads what follows "notify": nothing (show the settings),
// "mute KIND…", "unmute KIND…|all", "quiet 22:00-08:00|off",
// "[KIND] via CHANNEL…|default", in English or Chinese.
func (p *parser) notify(orig string) *ParseError {
	words := notifyWords(asciiLower(orig))
	if len(words) == 0 {
		return nil
	}
	ch := &NotifyChange{}
	p.cmd.Notify = ch
	switch w := words[0]; {
	case slices.Contains(notifyMute, w) && !(w == "关闭" && len(words) == 1):
		kinds, err := p.kinds(words[1:], false)
		if err != nil {
			return err
		}
		ch.Mute = kinds
	case slices.Contains(notifyUnmute, w):
		kinds, err := p.kinds(words[1:], true)
		if err != nil {
			return err
		}
		ch.Unmute = kinds
	case slices.Contains(notifyQuiet, w):
		q := strings.Join(words[1:], "")
		if slices.Contains(notifyOff, q) {
			q = "off"
		}
		if q == "" {
			return p.problem("found no quiet hours (write them like 22:00-08:00, or off)", "没有读到免打扰时段（写成 22:00-08:00，或 关）")
		}
		if _, _, err := core.ParseQuietHours(q); err != nil {
			return p.problem(fmt.Sprintf("%q are not quiet hours (write them like 22:00-08:00, or off)", q),
				fmt.Sprintf("“%s”不是免打扰时段（写成 22:00-08:00，或 关）", q))
		}
		ch.Quiet = q
	default:
		i := slices.IndexFunc(words, func(w string) bool { return slices.Contains(notifyVia, w) })
		if i < 0 || i > 1 {
			return p.problem(fmt.Sprintf("%q is not a notification setting", strings.Join(words, " ")),
				fmt.Sprintf("“%s”不是通知设置", strings.Join(words, " ")))
		}
		if i == 1 {
			k, ok := eventKind(words[0])
			if !ok {
				return p.problem(fmt.Sprintf("%q is not a kind of notice", words[0]), fmt.Sprintf("“%s”不是通知类型", words[0]))
			}
			ch.For = k
		}
		rest := words[i+1:]
		if len(rest) == 1 && slices.Contains(notifyReset, rest[0]) {
			ch.Via = []string{"default"}
			return nil
		}
		if len(rest) == 0 {
			return p.problem("found no channel (slack, discord or email)", "没有读到渠道（slack、discord 或 邮件）")
		}
		for _, w := range rest {
			c, ok := channelWords[w]
			if !ok {
				return p.problem(fmt.Sprintf("%q is not a channel (slack, discord or email)", w), fmt.Sprintf("“%s”不是渠道（slack、discord 或 邮件）", w))
			}
			if !slices.Contains(ch.Via, c) {
				ch.Via = append(ch.Via, c)
			}
		}
	}
	return nil
}

// kinds reads the event kinds after mute or unmute; all (for unmute) is
// core.AnyEvent.
func (p *parser) kinds(words []string, all bool) ([]core.EventKind, *ParseError) {
	if len(words) == 0 {
		return nil, p.problem("found no kind of notice (for example position_changed)", "没有读到通知类型（例如 position_changed）")
	}
	var out []core.EventKind
	for _, w := range words {
		if all && slices.Contains(notifyAll, w) {
			return []core.EventKind{core.AnyEvent}, nil
		}
		k, ok := eventKind(w)
		if !ok {
			return nil, p.problem(fmt.Sprintf("%q is not a kind of notice one can mute", w), fmt.Sprintf("“%s”不是可以静音的通知类型", w))
		}
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out, nil
}

// eventKind reads a kind of notice by its name ("position_changed",
// "position-changed") or a short or Chinese name ("position", "排位").
func eventKind(w string) (core.EventKind, bool) {
	if k, ok := kindWords[w]; ok {
		return k, true
	}
	k := core.EventKind(strings.ReplaceAll(w, "-", "_"))
	return k, slices.Contains(core.Mutable, k)
}

// notifyVocab is every Chinese word "notify" knows, longest first, for
// reading Chinese written without spaces ("免打扰22:00-08:00", "结束用邮件").
var notifyVocab = func() []string {
	var out []string
	add := func(ws ...string) {
		for _, w := range ws {
			if hasHan(w) && !slices.Contains(out, w) {
				out = append(out, w)
			}
		}
	}
	for _, l := range [][]string{notifyMute, notifyUnmute, notifyQuiet, notifyVia, notifyAll, notifyOff, notifyReset} {
		add(l...)
	}
	for w := range channelWords {
		add(w)
	}
	for w := range kindWords {
		add(w)
	}
	slices.SortFunc(out, func(a, b string) int {
		if d := len(b) - len(a); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	return out
}()

// notifyWords splits what follows "notify" into words: at spaces and
// commas, between Chinese and other characters, and within Chinese at the
// words notifyVocab knows (longest first).
func notifyWords(s string) []string {
	var out []string
	for _, field := range strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' || r == '，' || r == '、' || r == '。' }) {
		for field != "" {
			r, _ := utf8.DecodeRuneInString(field)
			han := unicode.Is(unicode.Han, r)
			end := strings.IndexFunc(field, func(r rune) bool { return unicode.Is(unicode.Han, r) != han })
			if end < 0 {
				end = len(field)
			}
			if han {
				out = append(out, splitHan(field[:end])...)
			} else {
				out = append(out, field[:end])
			}
			field = field[end:]
		}
	}
	return out
}

// splitHan splits a run of Chinese at the words notifyVocab knows; what
// lies between them stays together as one word.
func splitHan(s string) []string {
	var out []string
	unknown := ""
	for s != "" {
		i := slices.IndexFunc(notifyVocab, func(w string) bool { return strings.HasPrefix(s, w) })
		if i < 0 {
			_, n := utf8.DecodeRuneInString(s)
			unknown, s = unknown+s[:n], s[n:]
			continue
		}
		if unknown != "" {
			out, unknown = append(out, unknown), ""
		}
		out, s = append(out, notifyVocab[i]), s[len(notifyVocab[i]):]
	}
	if unknown != "" {
		out = append(out, unknown)
	}
	return out
}

func hasHan(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return unicode.Is(unicode.Han, r) }) >= 0
}
