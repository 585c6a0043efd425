package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/web"
)

// runNotices shows or changes what gpucal tells a person without being
// asked: muted event kinds, quiet hours, email and channels.
func runNotices(ctx context.Context, e *env, args []string) error {
	var cf clientFlags
	var user, mute, quiet, zone, email string
	var via []string
	fs := newFlagSet("notices", e)
	fs.StringVar(&user, "user", "", "whose settings (admins); default: yours")
	fs.StringVar(&mute, "mute", "", "event kinds not to be told about, comma-separated (\"none\" for all of them again), e.g. position_changed,starts_soon")
	fs.StringVar(&quiet, "quiet", "", "quiet hours in --zone, like 22:00-08:00, or off")
	fs.StringVar(&zone, "zone", "", "the zone of the quiet hours, e.g. Europe/Berlin")
	fs.StringVar(&email, "email", "", "where notices by email go (\"none\" for nowhere), when the server sends email")
	fs.Func("via", "the channels notices go to: slack,email (every kind), finished=email (one kind), default (every channel again); repeatable", func(v string) error {
		via = append(via, v)
		return nil
	})
	_, c, _, err := cf.setup(e, fs, args, 0, 0)
	if err != nil {
		return err
	}
	if user == "" {
		me, err := c.Me(ctx)
		if err != nil {
			return err
		}
		user = me.Name
	}
	p, err := c.NotifyPrefs(ctx, user)
	if err != nil {
		return err
	}
	if flagSet(fs, "mute") || flagSet(fs, "quiet") || flagSet(fs, "zone") || flagSet(fs, "email") || flagSet(fs, "via") {
		if len(via) > 0 {
			choice := map[core.EventKind][]string{}
			for k, chans := range p.Via {
				choice[core.EventKind(k)] = chans
			}
			for _, v := range via {
				if v == "default" {
					clear(choice)
					continue
				}
				if choice, err = core.ParseVia(choice, v); err != nil {
					return usagef("--via: %v", err)
				}
			}
			p.Via = map[string][]string{}
			for k, chans := range choice {
				p.Via[string(k)] = chans
			}
		}
		if flagSet(fs, "email") {
			p.Email = email
			if email == "none" {
				p.Email = ""
			}
		}
		if flagSet(fs, "mute") {
			p.Muted = []string{}
			if mute != "none" {
				p.Muted = commaSeparated(mute)
			}
		}
		if flagSet(fs, "quiet") {
			p.Quiet = quiet
		}
		if flagSet(fs, "zone") {
			p.Zone = zone
		}
		if p, err = c.SetNotifyPrefs(ctx, user, p); err != nil {
			return err
		}
	}
	if cf.json {
		return printJSON(e.stdout, p)
	}
	printNotices(e, user, p)
	return nil
}

func printNotices(e *env, user string, p web.NotifyPrefs) {
	muted := "nothing"
	if len(p.Muted) > 0 {
		muted = strings.Join(p.Muted, ", ")
	}
	quiet := "none"
	if p.Quiet != "" {
		quiet = p.Quiet + " " + p.Zone
	}
	fmt.Fprintf(e.stdout, "Notices to %s: muted %s; quiet hours %s.\n", user, muted, quiet)
	if p.Email != "" {
		fmt.Fprintf(e.stdout, "Email: %s\n", p.Email)
	}
	choice := map[core.EventKind][]string{}
	for k, chans := range p.Via {
		choice[core.EventKind(k)] = chans
	}
	if len(choice) == 0 {
		return // every channel they can be reached on
	}
	var parts []string
	for _, part := range strings.Split(core.FormatVia(choice), ";") {
		if kind, chans, ok := strings.Cut(part, "="); ok {
			if kind == string(core.AnyEvent) {
				kind = "every kind"
			}
			parts = append(parts, kind+" by "+chans)
		}
	}
	if _, ok := choice[core.AnyEvent]; !ok {
		parts = append(parts, "everything else on every channel you can be reached on")
	}
	fmt.Fprintf(e.stdout, "Channels: %s.\n", strings.Join(parts, "; "))
}
