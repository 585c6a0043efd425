package bot

import (
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gpucal/gpucal/core"
)

// maxInput bounds what Parse reads: a /gpu command is one line, and the
// patterns below stay cheap on it.
const maxInput = 500

// Parse reads what a person typed after /gpu (a leading "/gpu" is
// accepted too), in English or Chinese, into a Command. now is the current
// instant and loc the user's time zone: every day and clock time in text is
// read in loc, and the Command's instants are UTC. docs/chat.md ("What /gpu
// reads") lists what it understands; the rules for windows are at the top
// of parse_time.go.
//
// A text it cannot read gives a *ParseError, whose message is one polite
// line in the text's language with an example. Parse never panics.
func Parse(text string, now time.Time, loc *time.Location) (cmd Command, err error) {
	if loc == nil {
		loc = time.UTC
	}
	p := &parser{now: now.In(loc), loc: loc, input: oneLine(text)}
	p.cmd.Lang = language(text)
	defer func() {
		if r := recover(); r != nil { // a bug here must not reach the chat as a stack trace
			cmd, err = Command{}, p.problem("could not make sense of it", "没能读懂")
		}
	}()
	if perr := p.parse(text); perr != nil {
		return Command{}, perr
	}
	return p.cmd, nil
}

// parser holds one Parse call's state; the cmd it fills in also tells a
// ParseError what was read so far.
type parser struct {
	now   time.Time // in loc
	loc   *time.Location
	input string
	cmd   Command
}

// Words that start each command. English ones are the first word; Chinese
// ones may be anywhere ("什么时候能用8张H100…", "订两张H100…").
var (
	enVerbs = map[string]Kind{
		"book": KindBook, "reserve": KindBook, "res": KindBook,
		"when": KindWhen, "whatif": KindWhen,
		"queue": KindQueue, "q": KindQueue,
		"mine": KindMine, "my": KindMine, "me": KindMine,
		"status": KindStatus, "calendar": KindCalendar, "cal": KindCalendar,
		"cancel": KindCancel, "extend": KindExtend, "release": KindRelease,
		"tz": KindTZ, "timezone": KindTZ, "zone": KindTZ,
		"notify": KindNotify, "notices": KindNotify, "notifications": KindNotify, "notification": KindNotify,
		"help": KindHelp, "?": KindHelp, "web": KindWeb, "link": KindWeb, "login": KindWeb,
	}
	zhVerbs = []struct {
		word string
		kind Kind
	}{
		{"我的", KindMine}, {"什么时候", KindWhen}, {"啥时候", KindWhen}, {"何时", KindWhen},
		{"预定", KindBook}, {"预订", KindBook}, {"预约", KindBook}, {"订", KindBook}, {"申请", KindBook},
		{"队列", KindQueue}, {"排队", KindQueue}, {"状态", KindStatus}, {"日历", KindCalendar}, {"日程", KindCalendar},
		{"取消", KindCancel}, {"延长", KindExtend}, {"延期", KindExtend}, {"续期", KindExtend},
		{"释放", KindRelease}, {"归还", KindRelease}, {"提前结束", KindRelease},
		{"时区", KindTZ}, {"通知", KindNotify}, {"提醒设置", KindNotify}, {"帮助", KindHelp}, {"怎么用", KindHelp}, {"用法", KindHelp},
		{"网页", KindWeb}, {"网站", KindWeb}, {"链接", KindWeb}, {"登录", KindWeb},
	}
)

// parse runs the steps in order; each reads its part of the text and
// blanks it, so that what is left at the end is what nobody understood.
func (p *parser) parse(text string) *ParseError {
	if len(text) > maxInput {
		return p.problem(fmt.Sprintf("it is longer than %d bytes", maxInput), fmt.Sprintf("超过了 %d 字节", maxInput))
	}
	// 1. Normalise: full-width forms, control characters, "/gpu".
	orig := normalise(text)
	low := asciiLower(orig)
	if rest, ok := strings.CutPrefix(strings.TrimLeft(low, " "), "/gpu"); ok && (rest == "" || rest[0] == ' ') {
		i := strings.Index(low, "/gpu")
		low, orig = blankAt(low, i, i+4), blankAt(orig, i, i+4)
	}
	// 2. The verb.
	p.cmd.Kind = p.verb(&low)
	orig = blankLike(orig, low)
	// 3. What the verb takes.
	switch p.cmd.Kind {
	case KindHelp, KindWeb, KindQueue, KindMine, KindStatus, KindCalendar:
		return nil // anything after them is ignored
	case KindTZ:
		return p.zone(orig)
	case KindNotify:
		return p.notify(orig)
	case KindCancel, KindExtend, KindRelease:
		return p.target(low)
	}
	return p.booking(low, orig)
}

// verb finds and blanks the command word; "" when there is none.
func (p *parser) verb(low *string) Kind {
	fields := strings.Fields(*low)
	if len(fields) == 0 {
		return KindHelp // "/gpu" alone
	}
	if k, ok := enVerbs[fields[0]]; ok {
		i := strings.Index(*low, fields[0])
		*low = blankAt(*low, i, i+len(fields[0]))
		return k
	}
	best, at := -1, len(*low)
	for i, v := range zhVerbs {
		if j := strings.Index(*low, v.word); j >= 0 && (j < at || j == at && len(v.word) > len(zhVerbs[best].word)) {
			best, at = i, j
		}
	}
	if best < 0 {
		return ""
	}
	*low = blankAt(*low, at, at+len(zhVerbs[best].word))
	return zhVerbs[best].kind
}

var (
	idRe      = regexp.MustCompile(`\b([rj])\s*#?\s*(\d{1,18})\b`)
	zoneWord  = regexp.MustCompile(`^[A-Za-z0-9_+\-/]{1,64}$`)
	zoneAlias = map[string]string{
		"utc": "UTC", "gmt": "UTC", "z": "UTC",
		"北京": "Asia/Shanghai", "上海": "Asia/Shanghai", "中国": "Asia/Shanghai",
		"beijing": "Asia/Shanghai", "shanghai": "Asia/Shanghai", "china": "Asia/Shanghai",
	}
)

// zone reads "tz Europe/Berlin"; the name is checked against the zone
// database (any capitalisation), a few city and country names are aliases.
func (p *parser) zone(orig string) *ParseError {
	arg := strings.TrimSpace(orig)
	name, ok := zoneName(arg)
	if !ok {
		if arg == "" {
			return p.problem("found no time zone", "没有读到时区")
		}
		return p.problem(fmt.Sprintf("%q is not a time zone I know", arg), fmt.Sprintf("“%s”不是已知的时区", arg))
	}
	p.cmd.Zone = name
	return nil
}

func zoneName(arg string) (string, bool) {
	if z, ok := zoneAlias[strings.ToLower(arg)]; ok {
		return z, true
	}
	if !zoneWord.MatchString(arg) || strings.EqualFold(arg, "local") {
		return "", false
	}
	for _, name := range []string{arg, titleZone(arg)} {
		if _, err := time.LoadLocation(name); err == nil {
			return name, true
		}
	}
	return "", false
}

// titleZone capitalises each part of a zone name: "america/new_york" →
// "America/New_York".
func titleZone(s string) string {
	b := []byte(strings.ToLower(s))
	for i := range b {
		if (i == 0 || b[i-1] == '/' || b[i-1] == '_' || b[i-1] == '-') && b[i] >= 'a' && b[i] <= 'z' {
			b[i] -= 'a' - 'A'
		}
	}
	return string(b)
}

// target reads the reservation or job a cancel, extend or release acts on,
// and for extend how long it adds.
func (p *parser) target(low string) *ParseError {
	g := idRe.FindStringSubmatch(low)
	if g == nil {
		return p.problem("found no reservation or job ID (they look like r42 or j7)", "没有读到预约或任务编号（形如 r42 或 j7）")
	}
	var id int64
	var err error
	if g[1] == "j" {
		id, err = core.ParseJobID(g[2])
	} else {
		id, err = core.ParseReservationID(g[2])
	}
	if err != nil {
		return p.problem(fmt.Sprintf("%q is not an ID", g[0]), fmt.Sprintf("“%s”不是有效编号", g[0]))
	}
	p.cmd.ID = fmt.Sprintf("%s%d", g[1], id)
	if g[1] == "j" && p.cmd.Kind != KindCancel {
		return p.problem("only reservations can be "+map[Kind]string{KindExtend: "extended", KindRelease: "released"}[p.cmd.Kind]+" (they look like r42)",
			"只有预约（形如 r42）可以"+map[Kind]string{KindExtend: "延长", KindRelease: "释放"}[p.cmd.Kind])
	}
	if p.cmd.Kind != KindExtend {
		return nil
	}
	rest := spaceCJK(idRe.ReplaceAllString(low, " "))
	lengths := readLengths(&rest)
	if len(lengths) != 1 || lengths[0].offset || lengths[0].d == 0 {
		return p.problem("found no length to extend by", "没有读到要延长多久")
	}
	p.cmd.By = Duration(lengths[0].d)
	return nil
}

// Notes and projects, read from the text as typed (case kept).
var (
	projectRe = regexp.MustCompile(`(?:\bproject|项目)\s*[:=：]?\s*([a-z0-9][a-z0-9_.\-/]*)`)
	zhNoteRe  = regexp.MustCompile(`(?:\bnote|备注|用途|用于)\s*[:=：]?\s*`)
	forRe     = regexp.MustCompile(`\bfor\s+`)
	// notNote is what may follow "for" without starting a note: a length,
	// a count or a day ("for 3h", "for an hour", "for tomorrow 9-13").
	notNote = regexp.MustCompile(`^(?:\d|(?:an?|one|two|three|half)\s+(?:an?\s+)?(?:hours?|days?|weeks?|minutes?)\b|(?:tomorrow|today|tonight|tmr|next|this|now|asap|noon|midnight|mon(?:day)?|tue(?:sday)?|wed(?:nesday)?|thu(?:rsday)?|fri(?:day)?|sat(?:urday)?|sun(?:day)?|jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t|tember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\b)`)
	asapRe  = regexp.MustCompile(`\b(?:asap|right now|now|immediately|straight away)\b|尽快|现在|马上|立即|立刻|立马`)
)

// booking reads book and when commands, and a command with no verb that
// names GPUs and a time (a booking).
func (p *parser) booking(low, orig string) *ParseError {
	// 1. Project and note, as typed. A note runs to the end of the text.
	if loc := projectRe.FindStringSubmatchIndex(low); loc != nil {
		p.cmd.Project = orig[loc[2]:loc[3]]
		low, orig = blankAt(low, loc[0], loc[1]), blankAt(orig, loc[0], loc[1])
	}
	noteAt, noteFrom := -1, -1
	if loc := zhNoteRe.FindStringIndex(low); loc != nil {
		noteAt, noteFrom = loc[0], loc[1]
	}
	for _, loc := range forRe.FindAllStringIndex(low, -1) {
		if !notNote.MatchString(low[loc[1]:]) && (noteAt < 0 || loc[0] < noteAt) {
			noteAt, noteFrom = loc[0], loc[1]
			break
		}
	}
	if noteAt >= 0 {
		p.cmd.Note = strings.Trim(strings.TrimSpace(orig[noteFrom:]), `"'“”`)
		low = low[:noteAt]
	}

	// 2. Lengths, GPUs, "asap", then the window in what is left.
	s := spaceCJK(low)
	lengths := readLengths(&s)
	gpus := readGPUs(&s)
	switch {
	case gpus.badCount != "":
		return p.problem(fmt.Sprintf("%q is not a GPU count from 1 to %d", gpus.badCount, maxGPUs),
			fmt.Sprintf("“%s”不是 1 到 %d 之间的 GPU 数量", gpus.badCount, maxGPUs))
	case gpus.badModel != "":
		return p.problem(fmt.Sprintf("%q is not a GPU model I know (they look like a100, h100, l40s)", gpus.badModel),
			fmt.Sprintf("“%s”不是已知的 GPU 型号（形如 a100、h100、l40s）", gpus.badModel))
	}
	p.cmd.GPUs, p.cmd.Model = gpus.count, gpus.model
	asap := false
	take(&s, asapRe, func([]string) bool { asap = true; return true })
	w, werr := p.readWindow(s)

	// 3. A command with no verb is a booking when it names GPUs and a time.
	hasTime := w.found || len(lengths) > 0 || asap
	inferred := p.cmd.Kind == ""
	if inferred {
		if !gpus.found || !hasTime {
			return p.unknownVerb(low)
		}
		p.cmd.Kind = KindBook
	}
	if left := leftover(w.leftover); left != "" {
		if first := strings.Fields(left)[0]; inferred && nearestVerb(first) != "" {
			return p.unknownVerb(first)
		}
		if !hasTime {
			return p.problem(fmt.Sprintf("found no time in %q", left), fmt.Sprintf("没能在“%s”里读到时间", left))
		}
		return p.problem(fmt.Sprintf("did not understand %q", left), fmt.Sprintf("没看懂“%s”", left))
	}
	if werr != nil {
		return werr
	}
	return p.fillTimes(w, lengths, asap)
}

// fillTimes fills in the times of a book or when command (see docs/chat.md).
func (p *parser) fillTimes(w windowRead, lengths []lengthRead, asap bool) *ParseError {
	var length, offset time.Duration
	for _, l := range lengths {
		if l.d == 0 {
			return p.problem(fmt.Sprintf("%q is not a length from 1 minute to a year", l.text), fmt.Sprintf("“%s”不是 1 分钟到一年之间的时长", l.text))
		}
		dst := &length
		if l.offset {
			dst = &offset
		}
		if *dst != 0 {
			return p.problem("found two lengths", "读到了两个时长")
		}
		*dst = l.d
	}
	if offset != 0 {
		if !w.start.IsZero() || asap {
			return p.problem("found two starts", "读到了两个开始时间")
		}
		w.start, w.relative = p.now.Add(offset).Truncate(time.Minute), true
		if w.start.Before(p.now) {
			w.start = w.start.Add(time.Minute)
		}
	}
	c := &p.cmd
	c.Relative = w.relative || asap
	if len(w.guesses) > 0 {
		said := make([]string, len(w.guesses))
		for i, g := range w.guesses {
			said[i] = say(c.Lang, g.en, g.zh)
		}
		c.Ambiguous = strings.Join(said, say(c.Lang, "; ", "；"))
	}
	if asap && !w.start.IsZero() && !w.startNow {
		return p.problem(fmt.Sprintf("found both asap and a start (%s)", p.stamp(w.start)), fmt.Sprintf("既有“尽快”又有开始时间（%s）", p.stamp(w.start)))
	}
	if !w.end.IsZero() && length != 0 && w.end.Sub(w.start) != length {
		return p.problem(fmt.Sprintf("the end (%s) and the length (%s) disagree", p.stamp(w.end), length),
			fmt.Sprintf("结束时间（%s）和时长（%s）对不上", p.stamp(w.end), length))
	}
	if !w.end.IsZero() && w.end.Sub(w.start) > maxLength {
		return p.problem("the window is longer than a year", "时间段超过了一年")
	}
	switch {
	case asap || w.startNow:
		c.ASAP = true
		if !w.end.IsZero() {
			c.Start, c.End = p.now.UTC(), w.end.UTC()
		} else {
			c.Duration = Duration(length)
		}
	case !w.start.IsZero():
		c.Start = w.start.UTC()
		switch {
		case !w.end.IsZero():
			c.End = w.end.UTC()
		case length != 0:
			c.Duration = Duration(length)
			c.End = w.start.Add(length).UTC()
		}
	default:
		c.Duration = Duration(length)
		c.ASAP = c.Kind == KindBook && length != 0
	}
	c.Relative = c.Relative || c.ASAP
	if c.Kind == KindWhen {
		if c.Duration == 0 && !c.End.IsZero() {
			c.Duration = Duration(c.End.Sub(c.Start))
		}
		if c.Duration == 0 {
			return p.problem("found no length (how long will it run?)", "没有读到要用多久")
		}
		return nil
	}
	switch {
	case c.ASAP && c.Duration == 0 && c.End.IsZero():
		return p.problem("found no length (how long do you need them?)", "没有读到要用多久")
	case !c.Start.IsZero() && c.End.IsZero():
		return p.problem(fmt.Sprintf("found a start (%s) but no end or length", p.stamp(w.start)),
			fmt.Sprintf("读到了开始时间（%s）却没有结束时间或时长", p.stamp(w.start)))
	case c.Start.IsZero() && !c.ASAP:
		return p.problem("found no time", "没有读到时间")
	}
	return nil
}

// fillers are words that carry no meaning of their own here.
var fillers = map[string]bool{
	"from": true, "for": true, "at": true, "on": true, "the": true, "please": true, "pls": true, "i": true, "we": true,
	"want": true, "need": true, "would": true, "like": true, "to": true, "starting": true, "start": true,
	"starts": true, "of": true, "with": true, "gpu": true, "gpus": true, "card": true, "cards": true, "by": true,
	"could": true, "can": true, "run": true, "get": true, "be": true, "free": true, "and": true, "x": true,
	"起": true, "开始": true, "之后": true, "以后": true, "的": true, "在": true, "从": true, "用": true, "能": true,
	"能用": true, "跑": true, "我": true, "要": true, "想": true, "给": true, "帮": true, "请": true, "一下": true,
	"吧": true, "呢": true, "可以": true, "个": true, "需要": true, "卡": true, "显卡": true, "张": true, "块": true,
	"使用": true, "?": true, "？": true,
}

// leftover returns what is left of s once punctuation and filler words are
// gone; "" when nothing is.
func leftover(s string) string {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || strings.ContainsRune(",.;:!()[]{}\"'，。；！、（）“”", r)
	}) {
		if !fillers[f] && !allFillers(f) {
			out = append(out, f)
		}
	}
	return strings.Join(out, " ")
}

// allFillers reports whether a run of Chinese characters is made of filler
// words ("我要用", "能用").
func allFillers(s string) bool {
	for s != "" {
		found := false
		for n := min(len(s), 6); n > 0; n-- {
			if fillers[s[:n]] {
				s, found = s[n:], true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// unknownVerb explains a first word that is no command.
func (p *parser) unknownVerb(low string) *ParseError {
	word := strings.Fields(low + " ")
	if len(word) == 0 {
		return p.problem("found nothing to do", "没有读到要做什么")
	}
	if guess := nearestVerb(word[0]); guess != "" {
		return p.problem(fmt.Sprintf("%q is not a command (did you mean %q?)", word[0], guess), fmt.Sprintf("“%s”不是命令（是不是想输入 %s？）", word[0], guess))
	}
	return p.problem(fmt.Sprintf("%q is not a command", word[0]), fmt.Sprintf("“%s”不是命令", word[0]))
}

// nearestVerb returns the English verb within two edits of w, or "".
func nearestVerb(w string) string {
	best, bestD := "", 3
	for _, v := range []string{"book", "when", "queue", "mine", "status", "calendar", "cancel", "extend", "release", "help", "web", "tz", "notify"} {
		if d := editDistance(w, v); d < bestD && len(w) > 2 {
			best, bestD = v, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	if len(a) > 20 {
		return 99
	}
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// language is "zh" when the text has Chinese characters, else "en".
func language(s string) string {
	for _, r := range s {
		if unicode.Is(unicode.Han, r) {
			return "zh"
		}
	}
	return "en"
}

// normalise folds full-width forms to ASCII ("４张Ａ１００", "９：００"), turns
// control characters and invalid bytes into spaces.
func normalise(s string) string {
	s = strings.ToValidUTF8(s, " ")
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 0xFF01 && r <= 0xFF5E:
			return r - 0xFEE0
		case r == 0x3000, r < 0x20, r == 0x7F, r == utf8.RuneError:
			return ' '
		}
		return r
	}, s)
}

// asciiLower lowercases ASCII letters only, so that byte offsets into the
// result are offsets into s.
func asciiLower(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, s)
}

// spaceCJK puts a space between Chinese characters and ASCII letters or
// digits ("明天9点" → "明天 9 点", "4张A100" → "4 张 a100"), so that the
// ASCII patterns find their word boundaries.
func spaceCJK(s string) string {
	var b strings.Builder
	prev := rune(0)
	for _, r := range s {
		if prev != 0 && (isASCIIWord(prev) && r > 0x7F && unicode.Is(unicode.Han, r) || r <= 0x7F && isASCIIWord(r) && prev > 0x7F && unicode.Is(unicode.Han, prev)) {
			b.WriteByte(' ')
		}
		b.WriteRune(r)
		prev = r
	}
	return b.String()
}

func isASCIIWord(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}

func blankAt(s string, i, j int) string { return s[:i] + strings.Repeat(" ", j-i) + s[j:] }

// blankLike blanks in orig the bytes that are blank in low (same length).
func blankLike(orig, low string) string {
	b := []byte(orig)
	for i := range b {
		if low[i] == ' ' {
			b[i] = ' '
		}
	}
	return string(b)
}

func oneLine(s string) string { return strings.Join(strings.Fields(strings.ToValidUTF8(s, "")), " ") }
