package run

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// basePath is the PATH a job starts with, the same for every user, so that
// a job does not inherit whatever PATH the agent was started with.
const basePath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// reservedEnv are the variables Start sets for every job besides the
// GPUCAL_ ones. core refuses them (and GPUCAL_*) at submit; Start refuses
// them again so that no other path can hand a job another job's GPUs.
var reservedEnv = map[string]bool{"CUDA_VISIBLE_DEVICES": true, "NVIDIA_VISIBLE_DEVICES": true}

// account is the user a job runs as: who it is, and the credential to
// switch to (nil when the job runs as the agent's own user).
type account struct {
	name, home string
	cred       *syscall.Credential
}

// DefaultMinUID is the lowest user ID a root agent runs a job as, unless
// Spec.MinUID says otherwise: root and the system accounts below it never
// run jobs (a gpucal user named "root" or "daemon" does not become one).
const DefaultMinUID = 1000

// resolveUser finds the account for name, for an agent running with the
// effective user ID euid as the user current. "" means the agent's user.
// Only root may start a job as somebody else, and then only as an account
// whose user ID is at least minUID (DefaultMinUID when 0) — never as root
// itself, even when the job's owner has root's name.
func resolveUser(name string, euid int, current *user.User, minUID int) (account, error) {
	if name == "" || (euid != 0 && name == current.Username) {
		return account{name: current.Username, home: current.HomeDir}, nil
	}
	if euid != 0 {
		return account{}, fmt.Errorf("running a job as user %q needs an agent running as root; it runs as %q", name, current.Username)
	}
	if minUID <= 0 {
		minUID = DefaultMinUID
	}
	u, err := user.Lookup(name)
	if err != nil {
		return account{}, fmt.Errorf("looking up the job's user: %w", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return account{}, fmt.Errorf("user %q has a non-numeric user ID %q", name, u.Uid)
	}
	if uid < uint64(minUID) {
		return account{}, fmt.Errorf("refusing to run a job as %q (user ID %d): jobs run as accounts with a user ID of at least %d, never as root or a system account", name, uid, minUID)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return account{}, fmt.Errorf("user %q has a non-numeric group ID %q", name, u.Gid)
	}
	ids, err := u.GroupIds()
	if err != nil {
		return account{}, fmt.Errorf("listing the groups of user %q: %w", name, err)
	}
	groups := make([]uint32, 0, len(ids))
	for _, id := range ids {
		g, err := strconv.ParseUint(id, 10, 32)
		if err != nil {
			return account{}, fmt.Errorf("user %q is in a group with a non-numeric ID %q", name, id)
		}
		groups = append(groups, uint32(g))
	}
	cred := &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: groups}
	return account{name: u.Username, home: u.HomeDir, cred: cred}, nil
}

// environ builds the job's environment, sorted by name: the base (PATH,
// HOME, USER, LOGNAME of acct), then s.Env, then the variables gpucal sets,
// which s.Env may not set.
func environ(s Spec, acct account) ([]string, error) {
	env := map[string]string{
		"PATH":    basePath,
		"HOME":    acct.home,
		"USER":    acct.name,
		"LOGNAME": acct.name,
	}
	for k, v := range s.Env {
		switch {
		case k == "" || strings.ContainsAny(k, "=\x00"):
			return nil, fmt.Errorf("environment variable %q is not a valid name", k)
		case strings.ContainsRune(v, 0):
			return nil, fmt.Errorf("environment variable %s contains a NUL character", k)
		case reservedEnv[k] || strings.HasPrefix(k, "GPUCAL_"):
			return nil, fmt.Errorf("environment variable %s is set by gpucal's agent; a job may not set it", k)
		}
		env[k] = v
	}
	gpus := strings.Join(s.GPUs, ",")
	env["CUDA_VISIBLE_DEVICES"] = gpus
	env["NVIDIA_VISIBLE_DEVICES"] = gpus
	if len(s.Nodes) > 0 {
		env["GPUCAL_NODES"] = strings.Join(s.Nodes, ",")
		env["GPUCAL_NODE_RANK"] = strconv.Itoa(s.Rank)
	}
	for k, v := range map[string]string{
		"GPUCAL_JOB":           s.JobID,
		"GPUCAL_JOB_ID":        s.JobID, // the same, by the name the agent issue gives it
		"GPUCAL_SERVER":        s.Server,
		"GPUCAL_JOB_TOKEN":     s.JobToken,
		"GPUCAL_PROGRESS_FILE": s.ProgressFile,
	} {
		if v != "" {
			env[k] = v
		}
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k + "=" + env[k]
	}
	return out, nil
}

// lookPath finds name in the job's PATH (not the agent's, as exec.LookPath
// would). A name with a slash is used as it is. Empty PATH entries, which
// would mean the working directory, are skipped.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("command %q not found in the job's PATH %q", name, path)
}
