package bot_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gpucal/gpucal/bot"
	"github.com/gpucal/gpucal/core"
)

// noticeEvents is one event of every kind, as the server writes them
// (now: Wed 2 Dec 2026 10:00 UTC = 18:00 in Shanghai).
var noticeEvents = []core.Event{
	{Kind: core.EventStarted, Data: map[string]string{"job": "j42", "name": "llama-ft", "gpus": "4"}},
	{Kind: core.EventStarted, Data: map[string]string{"job": "j43", "gpus": "2", "gpu": "node-3/0, node-3/1"}},
	{Kind: core.EventStartsSoon, Data: map[string]string{"job": "j42", "name": "llama-ft", "start": "2026-12-02T10:10:00Z", "start_p90": "2026-12-02T10:25:00Z"}},
	{Kind: core.EventStartMovedLater, Data: map[string]string{"job": "j42", "name": "llama-ft", "start": "2026-12-02T13:30:00Z", "was": "2026-12-02T12:00:00Z",
		"reason": "j812, ahead in the queue, is running longer than expected"}},
	{Kind: core.EventStartMovedLater, Data: map[string]string{"job": "j42", "was": "2026-12-02T12:00:00Z", "reason": "no node has 16×h100 free"}},
	{Kind: core.EventPositionChanged, Data: map[string]string{"job": "j42", "name": "llama-ft", "position": "3", "was": "2"}},
	{Kind: core.EventPositionChanged, Data: map[string]string{"job": "j42", "position": "1", "was": "4"}},
	{Kind: core.EventWillBeDrained, Data: map[string]string{"job": "j7", "reservation": "r12", "signal_at": "2026-12-03T00:50:00Z", "deadline": "2026-12-03T00:55:00Z"}},
	{Kind: core.EventDrainWarning, Data: map[string]string{"job": "j7", "reservation": "r12", "signal_at": "2026-12-03T00:50:00Z", "deadline": "2026-12-03T00:55:00Z"}},
	{Kind: core.EventFinished, Data: map[string]string{"job": "j42", "name": "llama-ft", "state": "succeeded", "ran": "9660", "estimate": "11400", "how": "exit code 0"}},
	{Kind: core.EventFinished, Data: map[string]string{"job": "j43", "state": "failed", "ran": "125", "how": "exit code 1 on node-3"}},
	{Kind: core.EventFinished, Data: map[string]string{"job": "j7", "state": "preempted", "ran": "3600", "reservation": "r12", "how": "stopped by SIGTERM"}},
	{Kind: core.EventForeignProcess, Data: map[string]string{"pid": "4242", "user": "mallory", "gpu": "node-2/3", "reservation": "r12", "holder": "alice", "until": "2026-12-02T14:00:00Z"}},
	{Kind: core.EventNodeDown, Data: map[string]string{"node": "node-4", "since": "2026-12-02T09:55:00Z"}},
	{Kind: core.EventNodeBack, Data: map[string]string{"node": "node-4"}},
	{Kind: core.EventGPUFault, Data: map[string]string{"gpu": "node-2/5", "fault": "XID 79 (GPU has fallen off the bus)"}},
	{Kind: core.EventNotificationFailed, Data: map[string]string{"recipient": "bob", "channel": "slack", "attempts": "8", "how": "channel_not_found", "name": "j3 started on 8 GPU(s)"}},
	{Kind: core.EventReservationSoon, Data: map[string]string{"reservation": "r12", "gpus": "4", "gpu": "node-2/0, node-2/1, node-2/2, node-2/3",
		"start": "2026-12-02T10:15:00Z", "until": "2026-12-02T14:00:00Z"}},
	{Kind: core.EventNoShow, Data: map[string]string{"reservation": "r12", "holder": "alice", "gpu": "node-2/0, node-2/1", "start": "2026-12-02T09:30:00Z"}},
	{Kind: core.EventIdleAllocated, Data: map[string]string{"job": "j42", "name": "llama-ft", "holder": "bob", "gpus": "2", "gpu": "node-1/0, node-1/1", "since": "2026-12-02T08:45:00Z"}},
	{Kind: core.EventSaturated, Data: map[string]string{"position": "37", "ran": "106200", "until": "86400"}},
	{Kind: core.EventDailySummary, Data: map[string]string{"en": "GPU digest, 1 day: 39% used.", "zh": "GPU 日报：利用率 39%。"}},
	{Kind: core.EventStarted, Detail: "j1 started on 2 GPU(s)"}, // written before events had fields
}

func TestNotice(t *testing.T) {
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Skip(err)
	}
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	want := [][2]string{
		{"j42 (llama-ft) started on 4 GPU(s).", "j42（llama-ft） 已开始，使用 4 张 GPU。"},
		{"j43 started on 2 GPU(s): node-3/0, node-3/1.", "j43 已开始，使用 2 张 GPU：node-3/0, node-3/1。"},
		{"j42 (llama-ft) should start at about 18:10 (by 18:25 at the latest).", "j42（llama-ft） 预计约 18:10 开始（最晚 18:25）。"},
		{"j42 (llama-ft) is now expected to start at 21:30, not 20:00: j812, ahead in the queue, is running longer than expected.",
			"j42（llama-ft） 预计开始时间推迟到 21:30（原为 20:00）：j812, ahead in the queue, is running longer than expected。"},
		{"j42 can no longer be planned (it was due at 20:00): no node has 16×h100 free.", "j42 暂时无法排期（原定 20:00）：no node has 16×h100 free。"},
		{"j42 (llama-ft) is now number 3 in the queue (was 2).", "j42（llama-ft） 现在排第 3 位（之前第 2 位）。"},
		{"j42 is now first in the queue (was 4).", "j42 现在排在队首（之前第 4 位）。"},
		{"j7 will be stopped for reservation r12: it gets its checkpoint signal at Thu 3 Dec 08:50 and must be gone by Thu 3 Dec 08:55. Save a checkpoint.",
			"j7 将为预定 r12 让出 GPU：12月3日周四 08:50 收到保存检查点的信号，12月3日周四 08:55 前必须结束。请及时保存检查点。"},
		{"j7 will be stopped for reservation r12: it gets its checkpoint signal at Thu 3 Dec 08:50 and must be gone by Thu 3 Dec 08:55. Save a checkpoint.",
			"j7 将为预定 r12 让出 GPU：12月3日周四 08:50 收到保存检查点的信号，12月3日周四 08:55 前必须结束。请及时保存检查点。"},
		{"j42 (llama-ft) succeeded after 2h 41m (estimated 3h 10m).", "j42（llama-ft） 已成功完成，运行了 2h 41m（预计 3h 10m）。"},
		{"j43 failed after 2m: exit code 1 on node-3.", "j43 失败，运行了 2m：exit code 1 on node-3。"},
		{"j7 was stopped for reservation r12 after 1h.", "j7 已为预定 r12 停止，运行了 1h。"},
		{"Process 4242 of mallory is using GPU node-2/3, which alice reserved until 22:00 (r12); gpucal did not start it.",
			"mallory 的进程 4242 正在使用 GPU node-2/3，而该 GPU 已被 alice 预定到 22:00（r12）；此进程不是 gpucal 启动的。"},
		{"Node node-4 is down: no heartbeat since 17:55. Its jobs were marked failed.", "节点 node-4 已离线：自 17:55 起没有心跳，其上的任务已标记为失败。"},
		{"Node node-4 is back: its agent answers again.", "节点 node-4 已恢复，代理重新响应。"},
		{"GPU node-2/5 is out of service: XID 79 (GPU has fallen off the bus). Nothing new is placed on it until an admin runs gpucal node clear-fault node-2/5.",
			"GPU node-2/5 已停用：XID 79 (GPU has fallen off the bus)。在管理员运行 gpucal node clear-fault node-2/5 之前不会再分配任务。"},
		{"Could not tell bob over slack after 8 attempts (channel_not_found): j3 started on 8 GPU(s)",
			"经过 8 次尝试仍无法通过 slack 通知 bob（channel_not_found）：j3 started on 8 GPU(s)"},
		{"Your reservation r12 opens at 18:15: 4 GPU(s), node-2/0, node-2/1, node-2/2, node-2/3, until 22:00.",
			"你的预定 r12 将于 18:15 开始：4 张 GPU（node-2/0, node-2/1, node-2/2, node-2/3），到 22:00。"},
		{"Reservation r12 of alice (node-2/0, node-2/1) opened at 17:30 and its GPUs are unused. Release it (/gpu release r12) if it is not needed, so others can use them.",
			"alice 的预定 r12（node-2/0, node-2/1）已于 17:30 开始，但 GPU 一直空闲。如不需要请释放（/gpu 释放 r12），让其他人使用。"},
		{"j42 (llama-ft) of bob holds 2 GPU(s) (node-1/0, node-1/1) that have been idle since 16:45. Cancel it (/gpu cancel j42) if it is stuck.",
			"bob 的 j42（llama-ft） 占用的 2 张 GPU（node-1/0, node-1/1）自 16:45 起一直空闲。如果任务卡住了，请取消（/gpu 取消 j42）。"},
		{"The queue is saturated: 9 in 10 of the 37 queued jobs wait up to 1d 5h (more than 1d).",
			"队列已饱和：37 个排队任务中九成要等待最多 1d 5h（超过 1d）。"},
		{"GPU digest, 1 day: 39% used.", "GPU 日报：利用率 39%。"},
		{"j1 started on 2 GPU(s)", "j1 started on 2 GPU(s)"},
	}
	if len(want) != len(noticeEvents) {
		t.Fatalf("%d events, %d expectations", len(noticeEvents), len(want))
	}
	for i, e := range noticeEvents {
		for l, lang := range []string{"en", "zh"} {
			if got := bot.Notice(e, lang, shanghai, now).Text; got != want[i][l] {
				t.Errorf("%s in %s:\n got %q\nwant %q", e.Kind, lang, got, want[i][l])
			}
		}
	}
}

// TestNoticeLogTail: a failed job's notice shows the end of its log as
// code, in either language; Reply.String and CodeWithin keep whole last
// lines and no fence.
func TestNoticeLogTail(t *testing.T) {
	e := core.Event{Kind: core.EventFinished, Data: map[string]string{"job": "j43", "state": "failed", "ran": "125", "how": "exit code 1",
		"log_tail": "Traceback (most recent call last):\n  x = `y`\nRuntimeError: CUDA out of memory"}}
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	en, zh := bot.Notice(e, "en", time.UTC, now), bot.Notice(e, "zh", time.UTC, now)
	if en.Text != "j43 failed after 2m: exit code 1. The last lines of its log:" || zh.Text != "j43 失败，运行了 2m：exit code 1。 日志最后几行：" {
		t.Errorf("texts %q, %q", en.Text, zh.Text)
	}
	if en.Code != e.Data["log_tail"] || en.String() != en.Text+"\n"+e.Data["log_tail"] {
		t.Errorf("code %q, string %q", en.Code, en.String())
	}
	if got := en.CodeWithin(40); got != "RuntimeError: CUDA out of memory" {
		t.Errorf("CodeWithin(40) = %q; want the last whole line", got)
	}
	if got := en.CodeWithin(1000); strings.Contains(got, "`") {
		t.Errorf("CodeWithin kept a backtick: %q", got)
	}
	if got := (bot.Reply{Code: "ab长长"}).CodeWithin(4); got != "长" {
		t.Errorf("one long line cut to %q; want whole characters from its end", got)
	}
}
