// Command gpucal is gpucal's one binary: the server, the demo, and the
// client commands that talk to a server's API.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	_ "time/tzdata" // zones for /gpu tz and chat users on hosts without a zone database
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *env, args []string) error
}

func commands() []command {
	return []command{
		{"server", "run the gpucal server", runServer},
		{"demo", "run a server on SQLite with a demo cluster and bookings", runDemo},
		{"login", "save the server URL and API token for the client commands", runLogin},
		{"whoami", "show who the saved token belongs to", runWhoami},
		{"nodes", "list nodes and what every GPU is doing now", runNodes},
		{"node", "manage the inventory: node join-token (agents join with it), node add", runNode},
		{"book", "book GPUs: book 4 a100 --from \"tomorrow 9:00\" --to \"tomorrow 13:00\"", runBook},
		{"list", "list reservations (default: current and upcoming)", runList},
		{"show", "show one reservation: show r42", runShow},
		{"cancel", "give a reservation back or cancel a job: cancel r42, cancel j42", runCancel},
		{"extend", "extend a reservation: extend r42 1h", runExtend},
		{"release", "end an active reservation now: release r42", runRelease},
		{"submit", "queue a job: submit --gpus 4 --model a100 --name llama-ft -- python train.py", runSubmit},
		{"queue", "the queue: predicted start and end of every job, and why it waits", runQueue},
		{"when", "when could a job start? when 8 h100 12h (changes nothing)", runWhen},
		{"jobs", "list jobs: jobs --mine --state running --type finetune", runJobs},
		{"job", "show one job: job j42 (cancel it: cancel j42)", runJob},
		{"logs", "print a job's output: logs j42 [--follow]", runLogs},
		{"progress", "report how far a running job is: progress j42 0.42, 42%, or 120/1000 steps", runProgress},
		{"calendar", "print a per-GPU timeline: calendar --from today --days 2", runCalendar},
		{"notices", "what gpucal tells you unasked: notices --mute position_changed --quiet 22:00-08:00 --zone Europe/Berlin", runNotices},
		{"report", "usage over a period: GPU-hours by project, user and type, bookings, waits: report --from -7d [--csv]", runReport},
		{"digest", "the weekly digest's text and chart: digest --preview out.png [--from … --to …] [--lang zh] [--demo]", runDigest},
		{"token", "issue API tokens: token create --user alice [--admin]", runToken},
		{"user", "manage users: user add alice [--admin], user list", runUser},
		{"project", "manage projects: project add nlp --members alice,bob, project list", runProject},
		{"audit", "show the audit log (admins)", runAudit},
		{"agent", "run on a GPU node: agent --server URL --join-token TOKEN runs its jobs and serves DCGM-named metrics on :9400", runAgent},
		{"parse", "show how the chat reads a /gpu text: parse --tz Asia/Shanghai book 4 a100 tomorrow 9-13", runParse},
		{"sim", "replay a job trace through the planner: sim --trace FILE --format philly --compare", runSim},
		{"backup", "copy the SQLite database while the server runs: backup [--to FILE]", runBackup},
		{"loadtest", "drive server replicas on loopback with simulated agents and booking clients, then check them: loadtest --db postgres://… --replicas 2 --kill-leader-after 1m", runLoadtest},
		{"eval", "measure estimates on traces: eval estimate --trace FILE --format swf, eval progress --trace DIR", runEval},
		{"version", "print the version", func(ctx context.Context, e *env, args []string) error {
			fmt.Fprintln(e.stdout, "gpucal", version)
			return nil
		}},
	}
}

// env is what a command may touch: its streams and environment, so that
// tests can run commands in-process.
type env struct {
	stdout, stderr io.Writer
	getenv         func(string) string
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	e := &env{stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
	os.Exit(run(ctx, e, os.Args[1:]))
}

// run runs one command line and returns the process exit code: 0 on
// success, 1 when the command failed, 2 for a usage error.
func run(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(e.stdout)
		return 0
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, e, args[1:])
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.Is(err, errReported):
			return 1
		case errors.As(err, new(usageError)):
			fmt.Fprintf(e.stderr, "gpucal %s: %v\n", c.name, err)
			return 2
		}
		printError(e, err)
		return 1
	}
	fmt.Fprintf(e.stderr, "gpucal: unknown command %q\n\n", args[0])
	usage(e.stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "gpucal: a calendar and scheduler for your team's GPUs.\n\nUsage: gpucal <command> [arguments]\n\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'gpucal <command> -h' for a command's flags. Client commands read GPUCAL_SERVER and GPUCAL_TOKEN,\nor the file written by 'gpucal login'.")
}

// usageError is a mistake in the command line itself.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }
