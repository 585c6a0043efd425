package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/web"
)

func runLogin(ctx context.Context, e *env, args []string) error {
	var cf clientFlags
	fs := newFlagSet("login", e)
	_, c, _, err := cf.setup(e, fs, args, 0, 0)
	if err != nil {
		return err
	}
	if c.Token == "" {
		return usagef("give the token with --token or GPUCAL_TOKEN")
	}
	me, err := c.Me(ctx)
	if err != nil {
		return err
	}
	p, err := saveConfig(e, clientConfig{Server: c.BaseURL, Token: c.Token})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "Logged in to %s as %s. Saved to %s.\n", c.BaseURL, me.Name, p)
	return nil
}

func runWhoami(ctx context.Context, e *env, args []string) error {
	var cf clientFlags
	fs := newFlagSet("whoami", e)
	_, c, _, err := cf.setup(e, fs, args, 0, 0)
	if err != nil {
		return err
	}
	me, err := c.Me(ctx)
	if err != nil || cf.json {
		return jsonOr(e, err, cf.json, me)
	}
	role := "user"
	if me.Admin {
		role = "admin"
	}
	fmt.Fprintf(e.stdout, "%s (%s) on %s\n", me.Name, role, c.BaseURL)
	for p, r := range me.Projects {
		fmt.Fprintf(e.stdout, "  project %s: %s\n", p, r)
	}
	return nil
}

func runNodes(ctx context.Context, e *env, args []string) error {
	var cf clientFlags
	fs := newFlagSet("nodes", e)
	_, c, loc, err := cf.setup(e, fs, args, 0, 0)
	if err != nil {
		return err
	}
	nodes, err := c.Nodes(ctx)
	if err != nil || cf.json {
		return jsonOr(e, err, cf.json, nodes)
	}
	printNodes(e.stdout, nodes, time.Now(), loc)
	return nil
}

func runNode(ctx context.Context, e *env, args []string) error {
	if len(args) > 0 && args[0] == "join-token" {
		return runJoinToken(ctx, e, args[1:])
	}
	if len(args) > 0 && args[0] == "clear-fault" {
		return runClearFault(ctx, e, args[1:])
	}
	if len(args) == 0 || args[0] != "add" {
		return usagef("usage: gpucal node join-token [--ttl 24h] | gpucal node clear-fault NODE/INDEX | gpucal node add NAME --gpus 8 --model \"NVIDIA A100-SXM4-80GB\" [--memory 81920] [--uuids GPU-…,…] | gpucal node add --file node.json")
	}
	var cf clientFlags
	var count int
	var model, uuids, file string
	var memory int64
	fs := newFlagSet("node add", e)
	cf.register(fs)
	fs.IntVar(&count, "gpus", 0, "number of GPUs")
	fs.StringVar(&model, "model", "", "GPU model as nvidia-smi prints it, e.g. \"NVIDIA A100-SXM4-80GB\"")
	fs.Int64Var(&memory, "memory", 0, "GPU memory in MiB")
	fs.StringVar(&uuids, "uuids", "", "comma-separated GPU UUIDs in index order (nvidia-smi -L); default: placeholders until the agent reports real ones")
	fs.StringVar(&file, "file", "", "a JSON file with the node: {\"name\":…,\"gpus\":[{\"index\":0,\"model\":…,\"memory_mib\":…,\"uuid\":…}]}")
	pos, err := parseArgs(fs, args[1:], 0, 1)
	if err != nil {
		return err
	}
	var n web.NewNode
	switch {
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("reading %s: %w", file, err)
		}
	case len(pos) == 1:
		ids := splitComma(uuids)
		if len(ids) > 0 && len(ids) != count {
			return usagef("--uuids lists %d UUIDs for %d GPUs", len(ids), count)
		}
		n.Name = pos[0]
		for i := range count {
			id := fmt.Sprintf("GPU-%s-%d", pos[0], i)
			if len(ids) > 0 {
				id = ids[i]
			}
			n.GPUs = append(n.GPUs, web.NewGPU{Index: i, Name: model, Memory: memory, UUID: id})
		}
	default:
		return usagef("give a node NAME or --file")
	}
	c, _, err := cf.client(e)
	if err != nil {
		return err
	}
	added, err := c.AddNode(ctx, n)
	if err != nil || cf.json {
		return jsonOr(e, err, cf.json, added)
	}
	fmt.Fprintf(e.stdout, "Added node %s with %d GPU(s) (%s).\n", added.Name, len(added.GPUs), added.GPUs[0].Model)
	return nil
}

func runBook(ctx context.Context, e *env, args []string) error {
	var cf clientFlags
	var from, to, dur, node, note, project, owner string
	var sameNode bool
	fs := newFlagSet("book", e)
	cf.register(fs)
	fs.StringVar(&from, "from", "", "start: \"2026-12-03 09:00\", \"tomorrow 9:00\", \"+2h\", RFC 3339 …")
	fs.StringVar(&to, "to", "", "end, as --from, or \"+4h\" after the start")
	fs.StringVar(&dur, "for", "", "length instead of --to: 4h, 90m, 2d")
	fs.StringVar(&node, "node", "", "only this node")
	fs.BoolVar(&sameNode, "same-node", false, "all GPUs on one node")
	fs.StringVar(&note, "note", "", "what the GPUs are for")
	fs.StringVar(&project, "project", "", "the project to book for")
	fs.StringVar(&owner, "owner", "", "book for another user (admins)")
	pos, err := parseArgs(fs, args, 1, 2)
	if err != nil {
		return err
	}
	count, err := strconv.Atoi(pos[0])
	if err != nil {
		return usagef("%q is not a number of GPUs; usage: gpucal book 4 a100 --from … --to …", pos[0])
	}
	model := ""
	if len(pos) == 2 {
		model = pos[1]
	}
	c, loc, err := cf.client(e)
	if err != nil {
		return err
	}
	now := time.Now()
	if from == "" {
		return usagef("give the start with --from (\"tomorrow 9:00\", \"now\", …)")
	}
	start, err := parseWhen(from, now, loc)
	if err != nil {
		return usageError{err.Error()}
	}
	var end time.Time
	switch {
	case to != "" && dur != "":
		return usagef("give --to or --for, not both")
	case to != "":
		end, err = parseEnd(to, start, now, loc)
	case dur != "":
		end, err = parseEnd("+"+dur, start, now, loc)
	default:
		return usagef("give the end with --to or the length with --for")
	}
	if err != nil {
		return usageError{err.Error()}
	}
	req := web.BookRequest{GPUs: count, Model: model, Node: node, SameNode: sameNode, Start: start.UTC().Format(time.RFC3339),
		End: end.UTC().Format(time.RFC3339), Note: note, Project: project, Owner: owner}
	r, err := bookWithRetry(ctx, c, req)
	if err != nil {
		var apiErr *web.APIError
		if errors.As(err, &apiErr) && apiErr.Code == string(core.CodeConflict) && !cf.json {
			printConflict(e, apiErr, req, loc)
			return errReported
		}
		return err
	}
	if cf.json {
		return printJSON(e.stdout, r)
	}
	fmt.Fprintf(e.stdout, "Booked %s: %s\n", r.ID, describeReservation(r, loc))
	return nil
}

// bookWithRetry books with an idempotency key and retries when the server
// cannot be reached or is unavailable: the key makes the retries safe.
func bookWithRetry(ctx context.Context, c *web.Client, req web.BookRequest) (web.Reservation, error) {
	return retryWithKey(ctx, func(key string) (web.Reservation, error) { return c.Book(ctx, req, key) })
}

// errReported is returned by commands that already explained their failure.
var errReported = errors.New("reported")

func runList(ctx context.Context, e *env, args []string) error {
	var cf clientFlags
	var mine, all bool
	var user, project, from, to string
	fs := newFlagSet("list", e)
	fs.BoolVar(&mine, "mine", false, "only my reservations")
	fs.BoolVar(&all, "all", false, "include past, cancelled and released reservations")
	fs.StringVar(&user, "user", "", "only this user's")
	fs.StringVar(&project, "project", "", "only this project's")
	fs.StringVar(&from, "from", "", "window start (default: now, or everything with --all)")
	fs.StringVar(&to, "to", "", "window end")
	_, c, loc, err := cf.setup(e, fs, args, 0, 0)
	if err != nil {
		return err
	}
	now := time.Now()
	q := web.ReservationQuery{Mine: mine, User: user, Project: project}
	if !all {
		q.From = now
		q.States = []string{string(core.Confirmed)}
	}
	if from != "" {
		if q.From, err = parseWhen(from, now, loc); err != nil {
			return usageError{err.Error()}
		}
	}
	if to != "" {
		if q.To, err = parseEnd(to, q.From, now, loc); err != nil {
			return usageError{err.Error()}
		}
	}
	rs, err := c.Reservations(ctx, q)
	if err != nil || cf.json {
		return jsonOr(e, err, cf.json, rs)
	}
	printReservations(e.stdout, rs, loc)
	return nil
}

func runShow(ctx context.Context, e *env, args []string) error {
	return reservationCommand(ctx, e, "show", args, func(c *web.Client, id string) (web.Reservation, string, error) {
		r, err := c.Reservation(ctx, id)
		return r, "", err
	})
}

// runCancel gives a reservation back or, given a job ID (j42), cancels the job.
func runCancel(ctx context.Context, e *env, args []string) error {
	if cancelsJob(args) {
		return runCancelJob(ctx, e, args)
	}
	return reservationCommand(ctx, e, "cancel", args, func(c *web.Client, id string) (web.Reservation, string, error) {
		r, err := c.Cancel(ctx, id)
		return r, "Gave back", err
	})
}

func runRelease(ctx context.Context, e *env, args []string) error {
	return reservationCommand(ctx, e, "release", args, func(c *web.Client, id string) (web.Reservation, string, error) {
		r, err := c.Release(ctx, id)
		return r, "Released", err
	})
}

func runExtend(ctx context.Context, e *env, args []string) error {
	var cf clientFlags
	var to string
	fs := newFlagSet("extend", e)
	fs.StringVar(&to, "to", "", "new end instead of a duration: \"2026-12-03 18:00\", \"tomorrow 18:00\"")
	pos, c, loc, err := cf.setup(e, fs, args, 1, 2)
	if err != nil {
		return err
	}
	var req web.ExtendRequest
	switch {
	case len(pos) == 2 && to == "":
		d, err := core.ParseDuration(strings.TrimPrefix(pos[1], "+"))
		if err != nil {
			return usageError{core.ErrorMessage(err)}
		}
		req.By = d.String()
	case len(pos) == 1 && to != "":
		end, err := parseWhen(to, time.Now(), loc)
		if err != nil {
			return usageError{err.Error()}
		}
		req.End = end.UTC().Format(time.RFC3339)
	default:
		return usagef("usage: gpucal extend r42 1h | gpucal extend r42 --to \"tomorrow 18:00\"")
	}
	r, err := c.Extend(ctx, pos[0], req)
	if err != nil {
		var apiErr *web.APIError
		if errors.As(err, &apiErr) && apiErr.Code == string(core.CodeConflict) && !cf.json {
			fmt.Fprintf(e.stderr, "gpucal: %s\n", apiErr.Message)
			for _, alt := range apiErr.Alternatives {
				fmt.Fprintf(e.stderr, "  It can be extended until %s: gpucal extend %s --to %q\n", fmtWhen(alt.End, loc), pos[0], alt.End.In(loc).Format("2006-01-02 15:04"))
			}
			return errReported
		}
		return err
	}
	if cf.json {
		return printJSON(e.stdout, r)
	}
	fmt.Fprintf(e.stdout, "Extended %s: %s\n", r.ID, describeReservation(r, loc))
	return nil
}

// reservationCommand is the shape of commands that act on one reservation ID.
func reservationCommand(ctx context.Context, e *env, name string, args []string, op func(*web.Client, string) (web.Reservation, string, error)) error {
	var cf clientFlags
	fs := newFlagSet(name, e)
	pos, c, loc, err := cf.setup(e, fs, args, 1, 1)
	if err != nil {
		return err
	}
	r, verb, err := op(c, pos[0])
	if err != nil || cf.json {
		return jsonOr(e, err, cf.json, r)
	}
	if verb == "" {
		printReservation(e.stdout, r, loc)
		return nil
	}
	fmt.Fprintf(e.stdout, "%s %s (now %s): %s\n", verb, r.ID, r.State, describeReservation(r, loc))
	return nil
}

func runToken(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 || args[0] != "create" {
		return usagef("usage: gpucal token create [--user alice] [--admin] [--name laptop]")
	}
	var cf clientFlags
	var req web.TokenRequest
	fs := newFlagSet("token create", e)
	fs.StringVar(&req.User, "user", "", "whose token (default: yours); admins may name anyone, and the user is created if missing")
	fs.StringVar(&req.Name, "name", "", "a label for the token")
	fs.BoolVar(&req.Admin, "admin", false, "make the user a site admin")
	_, c, _, err := cf.setup(e, fs, args[1:], 0, 0)
	if err != nil {
		return err
	}
	tok, err := c.CreateToken(ctx, req)
	if err != nil || cf.json {
		return jsonOr(e, err, cf.json, tok)
	}
	fmt.Fprintf(e.stdout, "Token for %s (shown once, stored hashed):\n%s\n", tok.User, tok.Token)
	return nil
}

func runUser(ctx context.Context, e *env, args []string) error {
	if len(args) > 0 && (args[0] == "link" || args[0] == "links") {
		return runUserLink(ctx, e, args[0], args[1:])
	}
	if len(args) == 0 || (args[0] != "add" && args[0] != "list") {
		return usagef("usage: gpucal user add NAME [--admin] | user list | user link NAME --slack TEAM/USER | user links NAME")
	}
	var cf clientFlags
	var admin bool
	fs := newFlagSet("user "+args[0], e)
	if args[0] == "add" {
		fs.BoolVar(&admin, "admin", false, "a site admin")
	}
	maxPos := 0
	if args[0] == "add" {
		maxPos = 1
	}
	pos, c, loc, err := cf.setup(e, fs, args[1:], maxPos, maxPos)
	if err != nil {
		return err
	}
	if args[0] == "add" {
		u, err := c.AddUser(ctx, web.User{Name: pos[0], Admin: admin})
		if err != nil || cf.json {
			return jsonOr(e, err, cf.json, u)
		}
		fmt.Fprintf(e.stdout, "Added user %s. Give them a token: gpucal token create --user %s\n", u.Name, u.Name)
		return nil
	}
	us, err := c.Users(ctx)
	if err != nil || cf.json {
		return jsonOr(e, err, cf.json, us)
	}
	printUsers(e.stdout, us, loc)
	return nil
}

// runUserLink links a Slack or Discord person to an existing user
// (admins), or lists a user's links.
func runUserLink(ctx context.Context, e *env, sub string, args []string) error {
	var cf clientFlags
	var slackID, discordID string
	fs := newFlagSet("user "+sub, e)
	if sub == "link" {
		fs.StringVar(&slackID, "slack", "", "the Slack person: WORKSPACE_ID/USER_ID, like T024BE7LD/U024BE7LH")
		fs.StringVar(&discordID, "discord", "", "the Discord person: SERVER_ID/USER_ID")
	}
	pos, c, loc, err := cf.setup(e, fs, args, 1, 1)
	if err != nil {
		return err
	}
	if sub == "links" {
		ls, err := c.ChatLinks(ctx, pos[0])
		if err != nil || cf.json {
			return jsonOr(e, err, cf.json, ls)
		}
		if len(ls) == 0 {
			fmt.Fprintf(e.stdout, "%s has no chat identities.\n", pos[0])
		}
		for _, l := range ls {
			fmt.Fprintf(e.stdout, "%-8s %s/%s  zone %s  since %s\n", l.Platform, l.Team, l.ID, orDash(l.Zone), l.CreatedAt.In(loc).Format("2006-01-02 15:04"))
		}
		return nil
	}
	platform, who := "slack", slackID
	if (slackID == "") == (discordID == "") {
		return usagef("give the person with exactly one of --slack TEAM/USER or --discord SERVER/USER")
	}
	if discordID != "" {
		platform, who = "discord", discordID
	}
	team, id, ok := strings.Cut(who, "/")
	if !ok || team == "" || id == "" {
		return usagef("--%s %q: write WORKSPACE_ID/USER_ID", platform, who)
	}
	l, err := c.LinkChat(ctx, pos[0], web.ChatLink{Platform: platform, Team: team, ID: id})
	if err != nil || cf.json {
		return jsonOr(e, err, cf.json, l)
	}
	fmt.Fprintf(e.stdout, "%s %s/%s now acts as %s.\n", platform, team, id, l.User)
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func runProject(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 || (args[0] != "add" && args[0] != "list" && args[0] != "member") {
		return usagef("usage: gpucal project add NAME [--members a,b] [--admins c] | project member NAME USER [--role admin] | project list")
	}
	var cf clientFlags
	var members, admins, role string
	fs := newFlagSet("project "+args[0], e)
	nPos := map[string]int{"add": 1, "list": 0, "member": 2}[args[0]]
	switch args[0] {
	case "add":
		fs.StringVar(&members, "members", "", "comma-separated members")
		fs.StringVar(&admins, "admins", "", "comma-separated project admins")
	case "member":
		fs.StringVar(&role, "role", "member", "member or admin")
	}
	pos, c, _, err := cf.setup(e, fs, args[1:], nPos, nPos)
	if err != nil {
		return err
	}
	switch args[0] {
	case "add":
		p := web.Project{Name: pos[0]}
		for _, m := range splitComma(members) {
			p.Members = append(p.Members, web.Member{User: m, Role: "member"})
		}
		for _, m := range splitComma(admins) {
			p.Members = append(p.Members, web.Member{User: m, Role: "admin"})
		}
		added, err := c.AddProject(ctx, p)
		if err != nil || cf.json {
			return jsonOr(e, err, cf.json, added)
		}
		fmt.Fprintf(e.stdout, "Added project %s with %d member(s).\n", added.Name, len(added.Members))
	case "member":
		if err := c.SetMember(ctx, pos[0], web.Member{User: pos[1], Role: role}); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%s is now %s of %s.\n", pos[1], role, pos[0])
	default:
		ps, err := c.Projects(ctx)
		if err != nil || cf.json {
			return jsonOr(e, err, cf.json, ps)
		}
		printProjects(e.stdout, ps)
	}
	return nil
}

func runAudit(ctx context.Context, e *env, args []string) error {
	var cf clientFlags
	var actor, object string
	var limit int
	fs := newFlagSet("audit", e)
	fs.StringVar(&actor, "actor", "", "only changes by this user")
	fs.StringVar(&object, "object", "", "only changes to this object (r42, node/a100-1, user/alice)")
	fs.IntVar(&limit, "limit", 50, "how many entries")
	_, c, loc, err := cf.setup(e, fs, args, 0, 0)
	if err != nil {
		return err
	}
	es, err := c.Audit(ctx, actor, object, limit)
	if err != nil || cf.json {
		return jsonOr(e, err, cf.json, es)
	}
	printAudit(e.stdout, es, loc)
	return nil
}

func splitComma(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// jsonOr returns err, or prints v as JSON when asked to; the callers print
// text themselves when it returns nil without printing.
func jsonOr(e *env, err error, asJSON bool, v any) error {
	if err != nil || !asJSON {
		return err
	}
	return printJSON(e.stdout, v)
}

// runJoinToken prints a join token for agents (admins).
func runJoinToken(ctx context.Context, e *env, args []string) error {
	var cf clientFlags
	fs := newFlagSet("node join-token", e)
	ttl := fs.Duration("ttl", core.DefaultJoinTTL, "how long agents may join with it")
	_, c, loc, err := cf.setup(e, fs, args, 0, 0)
	if err != nil {
		return err
	}
	t, err := c.CreateJoinToken(ctx, *ttl)
	if err != nil || cf.json {
		return jsonOr(e, err, cf.json, t)
	}
	fmt.Fprintf(e.stdout, "%s\n\nValid until %s. On each GPU node run:\n  gpucal agent --server %s --join-token %s\n"+
		"Each agent exchanges it once for a credential of its own; keep it secret until it expires.\n",
		t.Token, t.ExpiresAt.In(loc).Format("Mon 2 Jan 15:04 MST"), c.BaseURL, t.Token)
	return nil
}

// runClearFault puts a GPU back in service (admins): node clear-fault a100-1/3.
func runClearFault(ctx context.Context, e *env, args []string) error {
	var cf clientFlags
	fs := newFlagSet("node clear-fault", e)
	pos, c, _, err := cf.setup(e, fs, args, 1, 1)
	if err != nil {
		return err
	}
	node, idx, ok := strings.Cut(pos[0], "/")
	index, err := strconv.Atoi(idx)
	if !ok || err != nil || node == "" {
		return usagef("name the GPU as NODE/INDEX, like a100-1/3, not %q", pos[0])
	}
	g, err := c.ClearFault(ctx, node, index)
	if err != nil || cf.json {
		return jsonOr(e, err, cf.json, g)
	}
	fmt.Fprintf(e.stdout, "%s/%d (%s) is back in service.\n", g.Node, g.Index, g.UUID)
	return nil
}
