package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// composeFile is the part of the Compose specification the kit uses;
// decoding it strictly refuses any other key.
type composeFile struct {
	Name     string                    `json:"name"`
	Services map[string]composeService `json:"services"`
	Volumes  map[string]any            `json:"volumes"`
}

type composeService struct {
	Image       string                                `json:"image"`
	Build       *struct{ Context, Dockerfile string } `json:"build"`
	Command     []string                              `json:"command"`
	Entrypoint  []string                              `json:"entrypoint"`
	User        string                                `json:"user"`
	Profiles    []string                              `json:"profiles"`
	Environment map[string]string                     `json:"environment"`
	Volumes     []string                              `json:"volumes"`
	Ports       []string                              `json:"ports"`
	DependsOn   any                                   `json:"depends_on"`
	Healthcheck *struct {
		Test              []string
		Interval, Timeout string
		Retries           int
	} `json:"healthcheck"`
	Restart string `json:"restart"`
}

// TestCompose checks deploy/compose: the file decodes strictly, runs the
// four services the issue names, mounts files that exist, passes gpucal
// flags and variables it has, and starts gpucal once PostgreSQL is
// healthy. `docker compose config` checks it too where the compose plugin
// is installed (it needs no engine).
func TestCompose(t *testing.T) {
	cli := readCLI(t)
	b, err := os.ReadFile("compose/compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var f composeFile
	if err := yaml.UnmarshalStrict(b, &f); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	for _, want := range []string{"gpucal", "postgres", "prometheus", "grafana"} {
		if _, ok := f.Services[want]; !ok {
			t.Errorf("no service %s", want)
		}
	}
	for name, s := range f.Services {
		if s.Image == "" || !strings.Contains(s.Image, ":") || strings.HasSuffix(s.Image, ":latest") {
			t.Errorf("%s: image %q: want a tagged image", name, s.Image)
		}
		for _, v := range s.Volumes {
			src, _, _ := strings.Cut(v, ":")
			if strings.HasPrefix(src, ".") {
				if _, err := os.Stat(filepath.Join("compose", src)); err != nil {
					t.Errorf("%s mounts %s: %v", name, src, err)
				}
			} else if _, ok := f.Volumes[src]; !ok {
				t.Errorf("%s mounts the volume %s, which is not declared", name, src)
			}
		}
		for k := range s.Environment {
			cli.checkEnv(t, name, k)
		}
		if s.Build != nil {
			if _, err := os.Stat(filepath.Join("compose", s.Build.Context, s.Build.Dockerfile)); err != nil {
				t.Errorf("%s builds from %v: %v", name, s.Build, err)
			}
		}
	}
	g := f.Services["gpucal"]
	if len(g.Command) == 0 || g.Command[0] != "server" {
		t.Errorf("gpucal runs %q, want gpucal server", g.Command)
	}
	cli.checkArgs(t, "gpucal", g.Command)
	if !strings.HasPrefix(g.Environment["GPUCAL_DB"], "postgres://") || g.Environment["GPUCAL_BOOTSTRAP_TOKEN"] == "" {
		t.Errorf("gpucal environment %v: want PostgreSQL and a bootstrap token", g.Environment)
	}
	if dep, _ := g.DependsOn.(map[string]any)["postgres"].(map[string]any); dep["condition"] != "service_healthy" || f.Services["postgres"].Healthcheck == nil {
		t.Errorf("gpucal depends on %v: want postgres with condition service_healthy, and postgres a healthcheck", g.DependsOn)
	}
	// The demo agent's command line is a shell script: check its gpucal flags.
	if a, ok := f.Services["agent-demo"]; ok {
		n := 0
		for _, line := range a.Command {
			for _, m := range regexp.MustCompile(`gpucal (agent|node join-token)((?: --?[a-z-]+(?:[ =](?:"[^"]*"|[^ -]\S*))?)+)`).FindAllStringSubmatch(line, -1) {
				cli.checkArgs(t, "agent-demo", strings.Fields(m[2]))
				n++
			}
		}
		if n != 2 {
			t.Errorf("agent-demo: found %d gpucal command lines in %q, want join-token and agent", n, a.Command)
		}
	}

	docker, err := exec.LookPath("docker")
	if err != nil {
		t.Log("docker is not installed: `docker compose config` does not check the file here")
		return
	}
	if out, err := exec.Command(docker, "compose", "version").CombinedOutput(); err != nil {
		t.Logf("the docker compose plugin is not installed (%s): `docker compose config` does not check the file here", strings.TrimSpace(string(out)))
		return
	}
	cmd := exec.Command(docker, "compose", "--env-file", "env.example", "config", "--quiet")
	cmd.Dir = "compose"
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("docker compose config: %v\n%s", err, out)
	}
}
