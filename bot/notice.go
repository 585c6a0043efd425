package bot

import (
	"fmt"
	"strconv"
	"time"

	"github.com/gpucal/gpucal/core"
)

// Notice words an outbox event for the person it is for, in their language
// ("en" or "zh") and zone; now is when it is sent. An event without the
// fields its kind needs (written by an older version) keeps its English
// sentence.
func Notice(e core.Event, lang string, loc *time.Location, now time.Time) Reply {
	if lang != "zh" {
		lang = "en"
	}
	if loc == nil {
		loc = time.UTC
	}
	d := e.Data
	at := func(key string) (string, bool) {
		t, err := time.Parse(time.RFC3339, d[key])
		if err != nil {
			return "", false
		}
		return clock(lang, t, now, loc), true
	}
	job := d[core.DataJob]
	if name := d[core.DataName]; name != "" && job != "" {
		job += " (" + name + ")"
		if lang == "zh" {
			job = d[core.DataJob] + "（" + name + "）"
		}
	}
	text, ok := "", true
	switch e.Kind {
	case core.EventStarted:
		text = say(lang, "%s started on %s GPU(s).", "%s 已开始，使用 %s 张 GPU。", job, d[core.DataGPUs])
		if on := d[core.DataGPU]; on != "" {
			text = say(lang, "%s started on %s GPU(s): %s.", "%s 已开始，使用 %s 张 GPU：%s。", job, d[core.DataGPUs], on)
		}
	case core.EventStartsSoon:
		start, ok1 := at(core.DataStart)
		p90, ok2 := at(core.DataStartP90)
		ok = ok1 && ok2
		text = say(lang, "%s should start at about %s (by %s at the latest).", "%s 预计约 %s 开始（最晚 %s）。", job, start, p90)
	case core.EventStartMovedLater:
		was, ok1 := at(core.DataWas)
		if start, ok2 := at(core.DataStart); ok2 {
			ok = ok1
			text = say(lang, "%s is now expected to start at %s, not %s: %s.", "%s 预计开始时间推迟到 %s（原为 %s）：%s。", job, start, was, d[core.DataReason])
		} else {
			ok = ok1
			text = say(lang, "%s can no longer be planned (it was due at %s): %s.", "%s 暂时无法排期（原定 %s）：%s。", job, was, d[core.DataReason])
		}
	case core.EventPositionChanged:
		if d[core.DataPosition] == "1" {
			text = say(lang, "%s is now first in the queue (was %s).", "%s 现在排在队首（之前第 %s 位）。", job, d[core.DataWas])
		} else {
			text = say(lang, "%s is now number %s in the queue (was %s).", "%s 现在排第 %s 位（之前第 %s 位）。", job, d[core.DataPosition], d[core.DataWas])
		}
		ok = d[core.DataPosition] != ""
	case core.EventWillBeDrained, core.EventDrainWarning:
		signal, ok1 := at(core.DataSignalAt)
		deadline, ok2 := at(core.DataDeadline)
		ok = ok1 && ok2
		text = say(lang, "%s will be stopped for reservation %s: it gets its checkpoint signal at %s and must be gone by %s. Save a checkpoint.",
			"%s 将为预定 %s 让出 GPU：%s 收到保存检查点的信号，%s 前必须结束。请及时保存检查点。", job, d[core.DataReservation], signal, deadline)
	case core.EventFinished:
		text = finished(lang, job, d)
		ok = d[core.DataState] != ""
	case core.EventForeignProcess:
		until, ok1 := at(core.DataUntil)
		ok = ok1
		who := d[core.DataUser]
		if who == "" {
			who = say(lang, "an unknown user", "未知用户")
		}
		if lang == "zh" {
			text = fmt.Sprintf("%s 的进程 %s 正在使用 GPU %s，而该 GPU 已被 %s 预定到 %s（%s）；此进程不是 gpucal 启动的。",
				who, d[core.DataPID], d[core.DataGPU], d[core.DataHolder], until, d[core.DataReservation])
		} else {
			text = fmt.Sprintf("Process %s of %s is using GPU %s, which %s reserved until %s (%s); gpucal did not start it.",
				d[core.DataPID], who, d[core.DataGPU], d[core.DataHolder], until, d[core.DataReservation])
		}
	case core.EventNodeDown:
		since, ok1 := at(core.DataSince)
		ok = ok1
		text = say(lang, "Node %s is down: no heartbeat since %s. Its jobs were marked failed.", "节点 %s 已离线：自 %s 起没有心跳，其上的任务已标记为失败。", d[core.DataNode], since)
	case core.EventNodeBack:
		text = say(lang, "Node %s is back: its agent answers again.", "节点 %s 已恢复，代理重新响应。", d[core.DataNode])
		ok = d[core.DataNode] != ""
	case core.EventGPUFault:
		text = say(lang, "GPU %s is out of service: %s. Nothing new is placed on it until an admin runs gpucal node clear-fault %s.",
			"GPU %s 已停用：%s。在管理员运行 gpucal node clear-fault %s 之前不会再分配任务。", d[core.DataGPU], d[core.DataFault], d[core.DataGPU])
		ok = d[core.DataGPU] != ""
	case core.EventNotificationFailed:
		if lang == "zh" {
			text = fmt.Sprintf("经过 %s 次尝试仍无法通过 %s 通知 %s（%s）：%s",
				d[core.DataAttempts], d[core.DataChannel], d[core.DataRecipient], d[core.DataHow], d[core.DataName])
		} else {
			text = fmt.Sprintf("Could not tell %s over %s after %s attempts (%s): %s",
				d[core.DataRecipient], d[core.DataChannel], d[core.DataAttempts], d[core.DataHow], d[core.DataName])
		}
		ok = d[core.DataRecipient] != ""
	case core.EventReservationSoon:
		start, ok1 := at(core.DataStart)
		until, ok2 := at(core.DataUntil)
		ok = ok1 && ok2
		text = say(lang, "Your reservation %s opens at %s: %s GPU(s), %s, until %s.", "你的预定 %s 将于 %s 开始：%s 张 GPU（%s），到 %s。",
			d[core.DataReservation], start, d[core.DataGPUs], d[core.DataGPU], until)
	case core.EventNoShow:
		start, ok1 := at(core.DataStart)
		ok = ok1
		text = say(lang, "Reservation %s of %s (%s) opened at %s and its GPUs are unused. Release it (/gpu release %s) if it is not needed, so others can use them.",
			"%s 的预定 %s（%s）已于 %s 开始，但 GPU 一直空闲。如不需要请释放（/gpu 释放 %s），让其他人使用。",
			d[core.DataReservation], d[core.DataHolder], d[core.DataGPU], start, d[core.DataReservation])
		if lang == "zh" {
			text = fmt.Sprintf("%s 的预定 %s（%s）已于 %s 开始，但 GPU 一直空闲。如不需要请释放（/gpu 释放 %s），让其他人使用。",
				d[core.DataHolder], d[core.DataReservation], d[core.DataGPU], start, d[core.DataReservation])
		}
	case core.EventIdleAllocated:
		since, ok1 := at(core.DataSince)
		ok = ok1
		if lang == "zh" {
			text = fmt.Sprintf("%s 的 %s 占用的 %s 张 GPU（%s）自 %s 起一直空闲。如果任务卡住了，请取消（/gpu 取消 %s）。",
				d[core.DataHolder], job, d[core.DataGPUs], d[core.DataGPU], since, d[core.DataJob])
		} else {
			text = fmt.Sprintf("%s of %s holds %s GPU(s) (%s) that have been idle since %s. Cancel it (/gpu cancel %s) if it is stuck.",
				job, d[core.DataHolder], d[core.DataGPUs], d[core.DataGPU], since, d[core.DataJob])
		}
	case core.EventDailySummary:
		text, ok = d[lang], d[lang] != ""
		if !ok {
			text, ok = d["en"], d["en"] != ""
		}
	case core.EventSaturated:
		p90, err1 := strconv.ParseInt(d[core.DataRan], 10, 64)
		limit, err2 := strconv.ParseInt(d[core.DataUntil], 10, 64)
		ok = err1 == nil && err2 == nil
		text = say(lang, "The queue is saturated: 9 in 10 of the %s queued jobs wait up to %s (more than %s).",
			"队列已饱和：%s 个排队任务中九成要等待最多 %s（超过 %s）。", d[core.DataPosition], span(time.Duration(p90)*time.Second), span(time.Duration(limit)*time.Second))
	default:
		ok = false
	}
	if !ok || job == "" && needsJob(e.Kind) {
		return Reply{Text: e.Detail, Lang: "en"}
	}
	r := Reply{Text: text, Lang: lang}
	if tail := d[core.DataLogTail]; tail != "" && e.Kind == core.EventFinished {
		r.Text += say(lang, " The last lines of its log:", " 日志最后几行：")
		r.Code = tail
	}
	return r
}

func needsJob(k core.EventKind) bool {
	switch k {
	case core.EventStarted, core.EventStartsSoon, core.EventStartMovedLater, core.EventPositionChanged,
		core.EventWillBeDrained, core.EventDrainWarning, core.EventFinished, core.EventIdleAllocated:
		return true
	}
	return false
}

// finished words how a job ended.
func finished(lang, job string, d map[string]string) string {
	ran := ""
	if s, err := strconv.ParseInt(d[core.DataRan], 10, 64); err == nil {
		ran = say(lang, " after %s", "，运行了 %s", span(time.Duration(s)*time.Second))
		if e, err := strconv.ParseInt(d[core.DataEstimate], 10, 64); err == nil && e > 0 {
			ran += say(lang, " (estimated %s)", "（预计 %s）", span(time.Duration(e)*time.Second))
		}
	}
	how := d[core.DataHow]
	switch core.JobState(d[core.DataState]) {
	case core.JobSucceeded:
		return say(lang, "%s succeeded%s.", "%s 已成功完成%s。", job, ran)
	case core.JobFailed:
		return say(lang, "%s failed%s: %s.", "%s 失败%s：%s。", job, ran, how)
	case core.JobPreempted:
		if r := d[core.DataReservation]; r != "" {
			return say(lang, "%s was stopped for reservation %s%s.", "%s 已为预定 %s 停止%s。", job, r, ran)
		}
		return say(lang, "%s was stopped for a reservation%s.", "%s 已为预定停止%s。", job, ran)
	case core.JobCancelled:
		return say(lang, "%s was cancelled%s.", "%s 已取消%s。", job, ran)
	}
	return say(lang, "%s ended%s (%s).", "%s 已结束%s（%s）。", job, ran, how)
}
