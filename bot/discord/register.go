package discord

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"
)

// commandName is the one application command gpucal registers.
const commandName = "gpu"

// words is a name or description in English and Chinese.
type words struct{ en, zh string }

func (w words) zhCN() map[discordgo.Locale]string {
	return map[discordgo.Locale]string{discordgo.ChineseCN: w.zh}
}

// option is one option of a subcommand.
type option struct {
	name, desc words
	typ        discordgo.ApplicationCommandOptionType
	required   bool
}

// subcommand is one /gpu subcommand. Its options become the text /gpu
// reads: the verb, then the options' values in order, each after its
// prefix ("note " before a note).
type subcommand struct {
	name, desc words
	options    []option
}

// Options shared by several subcommands. Discord wants required options
// before optional ones.
var (
	optGPUs  = option{words{"gpus", "数量"}, words{"How many GPUs (default 1)", "GPU 数量（默认 1）"}, discordgo.ApplicationCommandOptionInteger, false}
	optModel = option{words{"model", "型号"}, words{"GPU model, e.g. a100, h100 (default any)", "GPU 型号，例如 a100、h100（默认不限）"}, discordgo.ApplicationCommandOptionString, false}
	optID    = option{words{"id", "编号"}, words{"Reservation or job, e.g. r42 or j7", "预定或任务编号，例如 r42、j7"}, discordgo.ApplicationCommandOptionString, true}
)

// subcommands are /gpu's subcommands, in the order Discord lists them.
var subcommands = []subcommand{
	{words{"ask", "问"}, words{"Anything /gpu reads, in plain words", "用自然语言说，例如：订两张H100 今晚8点起 6小时"}, []option{
		{words{"text", "内容"}, words{"e.g. book 4 a100 tomorrow 9-13 for llama finetune", "例如：预定 明天上午9点到下午1点 4张A100"}, discordgo.ApplicationCommandOptionString, true},
	}},
	{words{"book", "预定"}, words{"Book GPUs for a time window", "预定一段时间的 GPU"}, []option{
		{words{"when", "时间"}, words{"e.g. tomorrow 9-13, tonight 8pm for 6h, asap for 3h", "例如：明天9点到13点、今晚8点起 6小时、尽快 3小时"}, discordgo.ApplicationCommandOptionString, true},
		optGPUs, optModel,
		{words{"note", "备注"}, words{"What it is for", "用途"}, discordgo.ApplicationCommandOptionString, false},
	}},
	{words{"when", "何时"}, words{"When could GPUs run for a while? Books nothing", "什么时候能用这些 GPU 跑这么久（不预定）"}, []option{
		{words{"duration", "时长"}, words{"How long, e.g. 12h", "多久，例如 12小时"}, discordgo.ApplicationCommandOptionString, true},
		optGPUs, optModel,
	}},
	{words{"queue", "队列"}, words{"The queue with predicted starts", "排队情况和预计开始时间"}, nil},
	{words{"mine", "我的"}, words{"My bookings and jobs", "我的预定和任务"}, nil},
	{words{"status", "状态"}, words{"The cluster at a glance", "集群概况"}, nil},
	{words{"calendar", "日历"}, words{"The next bookings and planned jobs", "接下来的预定和计划任务"}, nil},
	{words{"cancel", "取消"}, words{"Cancel a reservation or a job", "取消预定或任务"}, []option{optID}},
	{words{"extend", "延长"}, words{"Extend a reservation", "延长预定"}, []option{
		optID,
		{words{"by", "时长"}, words{"How much longer, e.g. 1h", "延长多久，例如 1小时"}, discordgo.ApplicationCommandOptionString, true},
	}},
	{words{"release", "释放"}, words{"Give the rest of an active reservation back", "提前释放正在使用的预定"}, []option{optID}},
	{words{"tz", "时区"}, words{"Set my time zone", "设置我的时区"}, []option{
		{words{"zone", "时区"}, words{"e.g. Europe/Berlin, Asia/Shanghai", "例如 Asia/Shanghai、Europe/Berlin"}, discordgo.ApplicationCommandOptionString, true},
	}},
	{words{"notify", "通知"}, words{"What I am told, when and where", "通知设置：静音、免打扰、渠道"}, []option{
		{words{"change", "修改"}, words{"e.g. mute position_changed, quiet 22:00-08:00, finished via email", "例如：静音 排位、免打扰 22:00-08:00、结束 渠道 邮件"}, discordgo.ApplicationCommandOptionString, false},
	}},
	{words{"help", "帮助"}, words{"What /gpu can do", "/gpu 能做什么"}, nil},
	{words{"web", "网页"}, words{"A link to the web calendar", "网页日历的链接"}, nil},
}

// Commands returns the application commands gpucal registers: /gpu with
// its subcommands, named and described in English and Chinese (zh-CN).
func Commands() []*discordgo.ApplicationCommand {
	one, maxLen := 1.0, 500
	gpu := &discordgo.ApplicationCommand{
		Name: commandName, Type: discordgo.ChatApplicationCommand,
		Description:              "Book GPUs and see when jobs will run",
		DescriptionLocalizations: &map[discordgo.Locale]string{discordgo.ChineseCN: "预定 GPU，查看任务何时运行"},
	}
	for _, sc := range subcommands {
		o := &discordgo.ApplicationCommandOption{
			Type: discordgo.ApplicationCommandOptionSubCommand,
			Name: sc.name.en, NameLocalizations: sc.name.zhCN(),
			Description: sc.desc.en, DescriptionLocalizations: sc.desc.zhCN(),
		}
		for _, op := range sc.options {
			p := &discordgo.ApplicationCommandOption{
				Type: op.typ, Required: op.required,
				Name: op.name.en, NameLocalizations: op.name.zhCN(),
				Description: op.desc.en, DescriptionLocalizations: op.desc.zhCN(),
			}
			switch op.typ {
			case discordgo.ApplicationCommandOptionInteger:
				p.MinValue, p.MaxValue = &one, 4096
			case discordgo.ApplicationCommandOptionString:
				p.MaxLength = maxLen
			}
			o.Options = append(o.Options, p)
		}
		gpu.Options = append(gpu.Options, o)
	}
	return []*discordgo.ApplicationCommand{gpu}
}

// Register puts /gpu in place of whatever commands the application had.
// A bulk overwrite is idempotent: registering the same set again changes
// nothing, so it runs at every start.
func (a *App) Register(ctx context.Context) error {
	if a.cfg.AppID == "" {
		return errors.New("discord: registering /gpu needs the application ID")
	}
	if _, err := a.api.ApplicationCommandBulkOverwrite(a.cfg.AppID, "", Commands(), discordgo.WithContext(ctx)); err != nil {
		return fmt.Errorf("discord: registering /gpu: %w", err)
	}
	return nil
}

// RunRegistration registers /gpu, trying again with backoff (up to five
// minutes) while Discord cannot be reached, and then waits for ctx to end,
// so that it can run beside the server in HTTP mode.
func (a *App) RunRegistration(ctx context.Context) error {
	if a.cfg.AppID == "" {
		return errors.New("discord: registering /gpu needs the application ID")
	}
	if !a.retry(ctx, "registering /gpu", a.Register) {
		return nil
	}
	a.log.Info("registered /gpu with Discord")
	<-ctx.Done()
	a.Wait()
	return nil
}

// retry runs f until it succeeds or ctx ends, logging each failure and
// backing off from 5 s to five minutes. It reports whether f succeeded.
func (a *App) retry(ctx context.Context, what string, f func(context.Context) error) bool {
	for wait := 5 * time.Second; ; wait = min(2*wait, 5*time.Minute) {
		err := f(ctx)
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		a.log.Error("Discord failed; trying again", "doing", what, "err", err, "in", wait)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(wait):
		}
	}
}

// commandText makes the text /gpu reads from a subcommand and its
// options; free says it is free text (/gpu ask), to be read in its own
// language.
func commandText(opts []*discordgo.ApplicationCommandInteractionDataOption) (text string, free bool) {
	if len(opts) == 0 || opts[0] == nil {
		return "help", false
	}
	sc := opts[0]
	vals := map[string]string{}
	for _, o := range sc.Options {
		if o != nil {
			vals[o.Name] = value(o.Value)
		}
	}
	switch sc.Name {
	case "ask":
		return vals["text"], true
	case "book":
		return join("book", gpus(vals), vals["when"], prefixed("note ", vals["note"])), false
	case "when":
		return join("when", gpus(vals), vals["duration"]), false
	case "cancel", "release":
		return join(sc.Name, vals["id"]), false
	case "extend":
		return join("extend", vals["id"], vals["by"]), false
	case "tz":
		return join("tz", vals["zone"]), false
	case "notify":
		return join("notify", vals["change"]), false
	}
	return sc.Name, false // queue, mine, status, calendar, help, web; an unknown one gets the parser's answer
}

// gpus is "2 a100", "2 gpus", "a100" or "" from the gpus and model options.
func gpus(vals map[string]string) string {
	n, model := vals["gpus"], vals["model"]
	switch {
	case n != "" && model != "":
		return n + " " + model
	case n != "":
		return n + " gpus"
	}
	return model
}

func prefixed(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}

func join(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p = strings.Join(strings.Fields(p), " "); p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, " ")
}

// value is an option's value as text; Discord sends numbers as JSON
// numbers, which decode as float64.
func value(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case int:
		return strconv.Itoa(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case bool:
		return strconv.FormatBool(v)
	}
	return ""
}
