package main

import (
	"context"
	"fmt"
	"time"

	"github.com/gpucal/gpucal/web"
)

// logPoll is how often `gpucal logs --follow` asks for more.
const logPoll = time.Second

// runLogs prints a job's output as its agent shipped it to the server;
// with --follow it keeps printing until the job has ended and all of its
// log has arrived.
func runLogs(ctx context.Context, e *env, args []string) error {
	var cf clientFlags
	fs := newFlagSet("logs", e)
	follow := fs.Bool("follow", false, "keep printing new output until the job ends (-f)")
	fs.BoolVar(follow, "f", false, "same as --follow")
	from := fs.Int64("offset", 0, "start this many bytes into the log")
	pos, c, _, err := cf.setup(e, fs, args, 1, 1)
	if err != nil {
		return err
	}
	if *from < 0 {
		return usagef("--offset must not be negative")
	}
	return followLog(ctx, e, c, pos[0], *from, *follow, logPoll)
}

// followLog copies the log of job from offset to stdout, polling every
// poll while follow is set and the log may still grow.
func followLog(ctx context.Context, e *env, c *web.Client, job string, offset int64, follow bool, poll time.Duration) error {
	for {
		p, err := c.Log(ctx, job, offset, 0)
		if err != nil {
			return err
		}
		if _, err := e.stdout.Write(p.Data); err != nil {
			return err
		}
		offset += int64(len(p.Data))
		if p.Dropped > 0 {
			fmt.Fprintf(e.stdout, "\n[gpucal: %d bytes of output past the server's log limit are not kept; the full log stays on the node]\n", p.Dropped)
			offset += p.Dropped
		}
		if offset < p.Size {
			continue // more is there already
		}
		if !follow || p.Done {
			if follow {
				fmt.Fprintf(e.stderr, "%s ended: %s.\n", job, p.State)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(poll):
		}
	}
}
