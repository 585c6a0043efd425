package bot

import (
	"fmt"
	"strings"
	"time"
)

// ParseError says politely, in the language of the input, what Parse read,
// what was missing or wrong, and a command that works. Its Error is one
// line, meant to be shown to the person as it is:
//
//	I read "book 4 a100 tomorow" as a booking of 4×A100 but found no time in "tomorow"; try: /gpu book 2 a100 tomorrow 9-13
//	我把“预定 4张A100 明天”理解为预定 4×A100，但读到了日期（12月3日 周四）但没有具体时间；可以试试：/gpu 预定 明天上午9点到下午1点 2张A100
type ParseError struct {
	Input   string // the text as typed, on one line
	Lang    string // "en" or "zh", like Command.Lang
	Read    string // what was understood so far ("a booking of 4×A100"); "" when nothing was
	Problem string // what is missing or wrong
	Example string // a command that works, starting with /gpu
}

func (e *ParseError) Error() string {
	in := e.Input
	if len(in) > 80 {
		in = strings.ToValidUTF8(in[:77], "") + "…"
	}
	if e.Lang == "zh" {
		if e.Read == "" {
			return fmt.Sprintf("没能读懂“%s”：%s；可以试试：%s", in, e.Problem, e.Example)
		}
		return fmt.Sprintf("我把“%s”理解为%s，但%s；可以试试：%s", in, e.Read, e.Problem, e.Example)
	}
	if e.Read == "" {
		return fmt.Sprintf("I could not read %q: %s; try: %s", in, e.Problem, e.Example)
	}
	return fmt.Sprintf("I read %q as %s but %s; try: %s", in, e.Read, e.Problem, e.Example)
}

// examples are the commands a ParseError suggests, by kind and language.
var examples = map[Kind][2]string{
	KindBook:    {"/gpu book 2 a100 tomorrow 9-13", "/gpu 预定 明天上午9点到下午1点 2张A100"},
	KindWhen:    {"/gpu when 8 h100 12h", "/gpu 什么时候能用8张H100跑12小时"},
	KindCancel:  {"/gpu cancel r42", "/gpu 取消 r42"},
	KindExtend:  {"/gpu extend r42 1h", "/gpu 延长 r42 1小时"},
	KindRelease: {"/gpu release r42", "/gpu 释放 r42"},
	KindTZ:      {"/gpu tz Europe/Berlin", "/gpu 时区 Asia/Shanghai"},
	KindNotify:  {"/gpu notify mute position_changed", "/gpu 通知 免打扰 22:00-08:00"},
	"":          {"/gpu help", "/gpu 帮助"},
}

// problem returns a ParseError for what p has read so far.
func (p *parser) problem(en, zh string) *ParseError {
	e := &ParseError{Input: p.input, Lang: p.cmd.Lang, Problem: en, Read: p.read()}
	ex, ok := examples[p.cmd.Kind]
	if !ok {
		ex = examples[""]
	}
	e.Example = ex[0]
	if e.Lang == "zh" {
		e.Problem, e.Example = zh, ex[1]
	}
	return e
}

// read describes the command read so far, in the input's language.
func (p *parser) read() string {
	c := p.cmd
	gpus := ""
	switch {
	case c.GPUs > 0 && c.Model != "":
		gpus = fmt.Sprintf("%d×%s", c.GPUs, displayModel(c.Model))
	case c.GPUs > 0 && p.cmd.Lang == "zh":
		gpus = fmt.Sprintf("%d 张 GPU", c.GPUs)
	case c.GPUs > 0:
		gpus = fmt.Sprintf("%d GPUs", c.GPUs)
	case c.Model != "":
		gpus = displayModel(c.Model)
	}
	if p.cmd.Lang == "zh" {
		switch c.Kind {
		case KindBook:
			return strings.TrimSpace("预定 " + gpus)
		case KindWhen:
			return strings.TrimSpace("查询 " + gpus + " 何时可用")
		case KindCancel:
			return "取消"
		case KindExtend:
			return "延长预约"
		case KindRelease:
			return "释放预约"
		case KindTZ:
			return "设置时区"
		case KindNotify:
			return "通知设置"
		}
		return ""
	}
	switch c.Kind {
	case KindBook:
		if gpus == "" {
			return "a booking"
		}
		return "a booking of " + gpus
	case KindWhen:
		if gpus == "" {
			return `a "when" question`
		}
		return `a "when" question for ` + gpus
	case KindCancel:
		return "a cancellation"
	case KindExtend:
		return "an extension"
	case KindRelease:
		return "a release"
	case KindTZ:
		return "a time zone change"
	case KindNotify:
		return "a notification setting"
	}
	return ""
}

// stamp writes an instant for a message: "Thu 3 Dec 09:00" or
// "12月3日 周四 09:00".
func (p *parser) stamp(t time.Time) string {
	t = t.In(p.loc)
	return p.day(dateOf(t)) + " " + t.Format("15:04")
}

// day writes a day for a message: "Thu 3 Dec" or "12月3日 周四".
func (p *parser) day(d date) string {
	t := time.Date(d.y, time.Month(d.m), d.d, 12, 0, 0, 0, time.UTC)
	if p.cmd.Lang == "zh" {
		return fmt.Sprintf("%d月%d日 周%s", d.m, d.d, []string{"日", "一", "二", "三", "四", "五", "六"}[t.Weekday()])
	}
	return t.Format("Mon 2 Jan")
}
