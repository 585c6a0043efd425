package web

import (
	"strconv"
	"strings"
)

// The web calendar speaks English and Chinese, chosen by the browser's
// language (Accept-Language), or by ?lang= for a link that insists. The
// same strings serve the server-rendered pages and the page's script,
// which gets them in its configuration.

// langs are the languages the pages speak; the first is the default.
var langs = []string{"en", "zh"}

// pickLang chooses the page language: the query's when it names one we
// speak, else the browser's most preferred one we speak, else English.
// header is an Accept-Language value such as "zh-CN,zh;q=0.9,en;q=0.8".
func pickLang(query, header string) string {
	if l := baseLang(query); l != "" {
		return l
	}
	best, bestQ := langs[0], -1.0
	for i, part := range strings.Split(header, ",") {
		if i >= 32 { // a longer header is not a browser's
			break
		}
		tag, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		q := 1.0
		if v, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || f < 0 || f > 1 {
				continue
			}
			q = f
		}
		if l := baseLang(tag); l != "" && q > bestQ && q > 0 {
			best, bestQ = l, q
		}
	}
	return best
}

// baseLang returns the language we speak that tag ("zh-Hans-CN", "en")
// names, "" for none.
func baseLang(tag string) string {
	base, _, _ := strings.Cut(strings.ToLower(strings.TrimSpace(tag)), "-")
	for _, l := range langs {
		if base == l {
			return l
		}
	}
	return ""
}

// messages are the pages' strings by language and key.
var messages = map[string]map[string]string{
	"en": {
		"title": "GPU calendar", "signIn": "Sign in", "signOut": "Sign out", "signedInAs": "Signed in as",
		"readOnly": "Read-only view: sign in to book or cancel.", "day": "Day", "week": "Week",
		"zoomIn": "Zoom in", "zoomOut": "Zoom out", "filters": "Filters", "user": "User", "project": "Project",
		"jobType": "Job type", "model": "GPU model", "all": "All",
		"legend": "Legend", "legendReservation": "Reservation", "legendRunning": "Running job",
		"legendPlanned": "Planned job: P50, lighter tail to P90", "legendLent": "Preemptible job lent into reserved time",
		"legendDrain": "Drain deadline", "legendNow": "Now", "legendMine": "Yours (thick outline)",
		"details": "Details", "detailsHint": "Hover over, tap or focus a booking or job to see its details here.",
		"mine": "Mine", "mineEmpty": "You have nothing booked or queued.", "mineAnon": "Sign in to see your bookings and jobs.",
		"position": "queue position", "starts": "starts", "ends": "ends", "running": "running", "planned": "planned",
		"book": "Book GPUs…", "bookTitle": "Book GPUs", "bookHint": "Drag across free time on a GPU's row to book it, or use this form.",
		"gpus": "GPUs", "node": "Node", "anyNode": "any node", "start": "Start", "end": "End", "note": "Note",
		"none": "none", "submit": "Book", "close": "Close", "booked": "Booked", "on": "on",
		"notBooked": "Not booked", "alternatives": "You could book instead:", "bookThis": "Book this",
		"cancelBooking": "Cancel this booking", "cancelled": "Cancelled", "live": "Live", "offline": "Reconnecting…",
		"updated": "Updated", "notBuilt": "The calendar's assets are not built into this gpucal.",
		"notBuiltHow": "Run `make build` (it needs Node.js 20 and npm), or `cd web/ui && npm ci && npm run build` and rebuild gpucal. The JSON API works without them.",
		"signinTitle": "Sign in to gpucal", "signinLink": "In Slack or Discord, send /gpu web: the bot answers you privately with a one-time sign-in link, valid for 15 minutes.",
		"signinToken": "Or sign in with an API token (gpucal token, or the demo's token):", "tokenLabel": "API token",
		"linkConfirm": "This one-time link signs you in to gpucal in this browser.", "back": "Back to the calendar",
		"estimate": "estimate", "source": "source", "runs": "past runs", "reason": "waiting because", "progress": "progress",
		"drain": "drained by", "lentInto": "lent into", "owner": "owner", "state": "state", "memory": "memory",
		"reservation": "Reservation", "job": "Job", "type": "type", "class": "class", "preemptible": "preemptible",
		"error": "Something went wrong", "loading": "Loading…", "gpuModel": "model", "free": "free",
		"signinFirst": "Sign in to book GPUs.", "now": "now", "idle": "idle", "down": "down", "reserved": "reserved",
		"skip": "Skip to the calendar", "viewLabel": "View", "failed": "Failed",
	},
	"zh": {
		"title": "GPU 日历", "signIn": "登录", "signOut": "退出", "signedInAs": "已登录：",
		"readOnly": "只读视图：登录后可预定或取消。", "day": "日", "week": "周",
		"zoomIn": "放大", "zoomOut": "缩小", "filters": "筛选", "user": "用户", "project": "项目",
		"jobType": "任务类型", "model": "GPU 型号", "all": "全部",
		"legend": "图例", "legendReservation": "预定", "legendRunning": "运行中的任务",
		"legendPlanned": "计划中的任务：P50，浅色延伸到 P90", "legendLent": "借用预定空闲时间的可抢占任务",
		"legendDrain": "腾出截止时间", "legendNow": "现在", "legendMine": "你的（粗边框）",
		"details": "详情", "detailsHint": "将鼠标移到、点按或用键盘选中一个预定或任务，在此查看详情。",
		"mine": "我的", "mineEmpty": "你没有预定或排队的任务。", "mineAnon": "登录后查看你的预定和任务。",
		"position": "排队位置", "starts": "开始", "ends": "结束", "running": "运行中", "planned": "计划",
		"book": "预定 GPU…", "bookTitle": "预定 GPU", "bookHint": "在 GPU 行的空闲时间上拖动即可预定，或使用此表单。",
		"gpus": "GPU 数", "node": "节点", "anyNode": "任意节点", "start": "开始", "end": "结束", "note": "备注",
		"none": "无", "submit": "预定", "close": "关闭", "booked": "已预定", "on": "于",
		"notBooked": "未能预定", "alternatives": "可以改为预定：", "bookThis": "预定这个",
		"cancelBooking": "取消此预定", "cancelled": "已取消", "live": "实时", "offline": "正在重新连接…",
		"updated": "更新于", "notBuilt": "此 gpucal 未内置日历的前端资源。",
		"notBuiltHow": "运行 `make build`（需要 Node.js 20 和 npm），或 `cd web/ui && npm ci && npm run build` 后重新编译 gpucal。JSON API 不受影响。",
		"signinTitle": "登录 gpucal", "signinLink": "在 Slack 或 Discord 中发送 /gpu web：机器人会私下回复一个一次性登录链接，15 分钟内有效。",
		"signinToken": "或者使用 API 令牌登录（gpucal token，或演示给出的令牌）：", "tokenLabel": "API 令牌",
		"linkConfirm": "此一次性链接将在本浏览器中登录 gpucal。", "back": "返回日历",
		"estimate": "估计", "source": "来源", "runs": "次历史运行", "reason": "等待原因", "progress": "进度",
		"drain": "腾出截止", "lentInto": "借用", "owner": "所有者", "state": "状态", "memory": "显存",
		"reservation": "预定", "job": "任务", "type": "类型", "class": "优先级", "preemptible": "可抢占",
		"error": "出错了", "loading": "加载中…", "gpuModel": "型号", "free": "空闲",
		"signinFirst": "登录后才能预定 GPU。", "now": "现在", "idle": "空闲", "down": "故障", "reserved": "已预定",
		"skip": "跳到日历", "viewLabel": "视图", "failed": "失败",
	},
}
