package bot

import (
	"errors"
	"testing"
	"time"
)

// FuzzParse checks the parser's promises on any text: it never panics,
// fails only with a *ParseError, never books a start before now (unless
// ASAP, which starts now), never ends before it starts, and keeps GPU
// counts within 0..4096.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"book 4 a100 tomorrow 9-13 for llama finetune", "book 2 gpus for 3h asap", "when 8 h100 12h",
		"queue", "mine", "status", "calendar", "cancel r42", "extend r42 1h", "release r42", "tz Europe/Berlin",
		"help", "web", "预定 明天上午9点到下午1点 4张A100", "订两张H100 今晚8点起 6小时", "什么时候能用8张H100跑12小时",
		"我的任务", "状态", "取消 r42", "延长 r42 1小时", "book 4 a100 tomorrow 9-1", "book A100 x4 Dec 5 2pm for 3h",
		"预定 12月5日下午3点到6点 两卡", "预定 下个月3号 9点到13点 2卡", "book 4 a100 dec 5 to dec 7",
		"book 4 a100 2026-12-10 9-17", "book 4 a100 until 6pm", "订两张H100 一个半小时", "book 2 gpus in 2 hours for 3h",
		"预定 后天晚上8点 四张H100 半小时", "book 4 a100 tomorrow 2:30 for 1h", "5号 9点到10点 2卡", "12月",
		"book 4 a100 tomorrow 9 to 1pm project nlp note: x", "/gpu", "", "下下周日 凌晨12点到晚上12点 3卡",
		"notify finished via email slack", "notify quiet 22-8", "通知免打扰22-8", "通知 结束用邮件", "通知 取消静音 全部",
	} {
		f.Add(s)
	}
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		f.Skip("no tzdata:", err)
	}
	nows := []time.Time{
		time.Date(2026, 12, 2, 15, 4, 0, 0, berlin),
		time.Date(2026, 3, 28, 23, 30, 0, 0, berlin), // the night before clocks go forward
		time.Date(2026, 10, 24, 23, 30, 0, 0, berlin),
		time.Date(2026, 12, 31, 23, 59, 0, 0, berlin),
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, now := range nows {
			c, err := Parse(text, now, berlin)
			if err != nil {
				var perr *ParseError
				if !errors.As(err, &perr) {
					t.Fatalf("Parse(%q): %T %v, want a *ParseError", text, err, err)
				}
				if perr.Error() == "" {
					t.Fatalf("Parse(%q): empty message", text)
				}
				continue
			}
			if c.GPUs < 0 || c.GPUs > maxGPUs {
				t.Errorf("Parse(%q).GPUs = %d", text, c.GPUs)
			}
			if !c.Start.IsZero() && c.Start.Before(now) {
				t.Errorf("Parse(%q) at %s starts at %s, before now", text, now, c.Start)
			}
			if !c.End.IsZero() && !c.End.After(c.Start) {
				t.Errorf("Parse(%q) at %s: end %s not after start %s", text, now, c.End, c.Start)
			}
			if c.Kind == KindBook && c.Start.IsZero() && !c.ASAP {
				t.Errorf("Parse(%q) at %s: a booking with no start and no asap", text, now)
			}
			if c.Kind == KindBook && !c.Start.IsZero() && c.End.IsZero() {
				t.Errorf("Parse(%q) at %s: a booking with a start and no end", text, now)
			}
			if c.Lang != "en" && c.Lang != "zh" {
				t.Errorf("Parse(%q).Lang = %q", text, c.Lang)
			}
		}
	})
}
