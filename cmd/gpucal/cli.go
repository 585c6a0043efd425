package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpucal/gpucal/web"
)

// newFlagSet returns a flag set that reports errors instead of exiting.
func newFlagSet(name string, e *env) *flag.FlagSet {
	fs := flag.NewFlagSet("gpucal "+name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	return fs
}

// parseArgs parses flags that may come before, between or after positional
// arguments ("book 4 a100 --from …") and checks the positional count.
func parseArgs(fs *flag.FlagSet, args []string, minPos, maxPos int) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usageError{err.Error()}
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	switch {
	case len(pos) < minPos:
		return nil, usagef("expected at least %d argument(s), got %d; see -h", minPos, len(pos))
	case maxPos >= 0 && len(pos) > maxPos:
		return nil, usagef("unexpected argument %q; see -h", pos[maxPos])
	}
	return pos, nil
}

// clientFlags are the flags every client command shares.
type clientFlags struct {
	server string
	token  string
	tz     string
	json   bool
}

func (c *clientFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.server, "server", "", "server URL (default: GPUCAL_SERVER, the saved login, or http://127.0.0.1:8080)")
	fs.StringVar(&c.token, "token", "", "API token (default: GPUCAL_TOKEN or the saved login)")
	fs.StringVar(&c.tz, "tz", "", "time zone for input and output, e.g. Europe/Berlin (default: local)")
	fs.BoolVar(&c.json, "json", false, "print JSON instead of text")
}

// setup registers the client flags on fs, parses args (with between minPos
// and maxPos positional arguments) and builds the API client: the set-up
// every client command starts with.
func (c *clientFlags) setup(e *env, fs *flag.FlagSet, args []string, minPos, maxPos int) ([]string, *web.Client, *time.Location, error) {
	c.register(fs)
	pos, err := parseArgs(fs, args, minPos, maxPos)
	if err != nil {
		return nil, nil, nil, err
	}
	client, loc, err := c.client(e)
	return pos, client, loc, err
}

// clientConfig is what `gpucal login` saves.
type clientConfig struct {
	Server string `json:"server"`
	Token  string `json:"token"`
}

func configPath(e *env) (string, error) {
	if p := e.getenv("GPUCAL_CONFIG"); p != "" {
		return p, nil
	}
	dir := e.getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home := e.getenv("HOME")
		if home == "" {
			var err error
			if home, err = os.UserHomeDir(); err != nil {
				return "", fmt.Errorf("finding the config folder: %w", err)
			}
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "gpucal", "config.json"), nil
}

func loadConfig(e *env) (clientConfig, error) {
	var c clientConfig
	p, err := configPath(e)
	if err != nil {
		return c, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("reading %s: %w", p, err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("reading %s: %w", p, err)
	}
	return c, nil
}

// saveConfig writes the client config readable by its owner only (it holds a token).
func saveConfig(e *env, c clientConfig) (string, error) {
	p, err := configPath(e)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return "", fmt.Errorf("creating %s: %w", filepath.Dir(p), err)
	}
	b, _ := json.MarshalIndent(c, "", "  ")
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return "", fmt.Errorf("writing %s: %w", p, err)
	}
	return p, os.Rename(tmp, p)
}

// client builds the API client: flags first, then GPUCAL_* variables, then
// the saved login.
func (c *clientFlags) client(e *env) (*web.Client, *time.Location, error) {
	loc, err := c.location(e)
	if err != nil {
		return nil, nil, err
	}
	saved, err := loadConfig(e)
	if err != nil {
		return nil, nil, err
	}
	server := firstNonEmpty(c.server, e.getenv("GPUCAL_SERVER"), saved.Server, "http://127.0.0.1:8080")
	token := firstNonEmpty(c.token, e.getenv("GPUCAL_TOKEN"), saved.Token)
	if !strings.Contains(server, "://") {
		server = "http://" + server
	}
	return &web.Client{BaseURL: server, Token: token}, loc, nil
}

func (c *clientFlags) location(e *env) (*time.Location, error) {
	name := firstNonEmpty(c.tz, e.getenv("GPUCAL_TZ"))
	if name == "" {
		return time.Local, nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, usagef("unknown time zone %q; use an IANA name like Europe/Berlin or Asia/Shanghai", name)
	}
	return loc, nil
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printError explains a failed command, with what a conflict clashed with
// and what could be booked instead.
func printError(e *env, err error) {
	var apiErr *web.APIError
	if !errors.As(err, &apiErr) {
		fmt.Fprintf(e.stderr, "gpucal: %v\n", err)
		return
	}
	fmt.Fprintf(e.stderr, "gpucal: %s\n", apiErr.Message)
	if apiErr.Status == 401 {
		fmt.Fprintln(e.stderr, "  Log in with: gpucal login --server URL --token TOKEN (or set GPUCAL_TOKEN)")
	}
}

// flagSet reports whether the flag was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	found := false
	fs.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}
