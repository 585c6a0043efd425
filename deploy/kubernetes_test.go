package deploy

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// object is one decoded Kubernetes object.
type object struct {
	where string
	kind  string
	meta  metav1.ObjectMeta
	obj   any
}

// decodeObjects splits a multi-document YAML stream and decodes each
// document strictly into its typed Kubernetes object (k8s.io/api): an
// unknown field, a misspelt one or a value of the wrong type fails, as
// the API server's schema would refuse it.
func decodeObjects(t *testing.T, where string, stream []byte) []object {
	t.Helper()
	var out []object
	for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(stream), -1) {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			t.Errorf("%s document %d: %v", where, i, err)
			continue
		}
		var obj any
		switch tm.APIVersion + " " + tm.Kind {
		case "v1 Namespace":
			obj = &corev1.Namespace{}
		case "v1 Secret":
			obj = &corev1.Secret{}
		case "v1 Service":
			obj = &corev1.Service{}
		case "apps/v1 Deployment":
			obj = &appsv1.Deployment{}
		case "apps/v1 DaemonSet":
			obj = &appsv1.DaemonSet{}
		case "policy/v1 PodDisruptionBudget":
			obj = &policyv1.PodDisruptionBudget{}
		default:
			t.Errorf("%s document %d: %s %s is not a kind the kit uses (add it to decodeObjects)", where, i, tm.APIVersion, tm.Kind)
			continue
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			t.Errorf("%s document %d (%s): %v", where, i, tm.Kind, err)
			continue
		}
		meta := *metaOf(obj)
		if meta.Name == "" {
			t.Errorf("%s document %d (%s) has no metadata.name", where, i, tm.Kind)
		}
		out = append(out, object{where: fmt.Sprintf("%s %s/%s", where, tm.Kind, meta.Name), kind: tm.Kind, meta: meta, obj: obj})
	}
	return out
}

func stripComments(doc string) string {
	return regexp.MustCompile(`(?m)^\s*#.*$`).ReplaceAllString(doc, "")
}

func metaOf(obj any) *metav1.ObjectMeta {
	switch o := obj.(type) {
	case *corev1.Namespace:
		return &o.ObjectMeta
	case *corev1.Secret:
		return &o.ObjectMeta
	case *corev1.Service:
		return &o.ObjectMeta
	case *appsv1.Deployment:
		return &o.ObjectMeta
	case *appsv1.DaemonSet:
		return &o.ObjectMeta
	case *policyv1.PodDisruptionBudget:
		return &o.ObjectMeta
	}
	panic(fmt.Sprintf("no metadata for %T", obj))
}

// checkKit checks a set of objects as one deployment: a server Deployment
// with its probes and Service, an agent DaemonSet as the agent needs it,
// Secrets holding what the pods read from them, and the selectors and
// ports that tie them together.
func checkKit(t *testing.T, cli gpucalCLI, objs []object, secretsFrom []object) {
	t.Helper()
	var server *appsv1.Deployment
	var agent *appsv1.DaemonSet
	secrets := map[string]map[string]bool{}
	for _, o := range append(slices.Clone(objs), secretsFrom...) {
		if s, ok := o.obj.(*corev1.Secret); ok {
			keys := map[string]bool{}
			for k := range s.StringData {
				keys[k] = true
				cli.checkEnv(t, o.where, k)
			}
			for k := range s.Data {
				keys[k] = true
				cli.checkEnv(t, o.where, k)
			}
			secrets[s.Name] = keys
		}
	}
	for _, o := range objs {
		switch x := o.obj.(type) {
		case *appsv1.Deployment:
			server = x
			checkPod(t, cli, o.where, x.Spec.Selector, x.Spec.Template, secrets)
		case *appsv1.DaemonSet:
			agent = x
			checkPod(t, cli, o.where, x.Spec.Selector, x.Spec.Template, secrets)
		}
	}
	if server == nil || agent == nil {
		t.Fatalf("want a server Deployment and an agent DaemonSet, got %v and %v", server != nil, agent != nil)
	}

	// The server: probes on the endpoints the server has, a Service onto its port.
	c := server.Spec.Template.Spec.Containers[0]
	if c.Args[0] != "server" {
		t.Errorf("server container runs %q, want gpucal server", c.Args)
	}
	probe := func(name string, p *corev1.Probe, path string) {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != path || p.HTTPGet.Port.String() != "http" {
			t.Errorf("server %s probe %+v, want GET %s on port http", name, p, path)
		}
	}
	probe("liveness", c.LivenessProbe, "/healthz")
	probe("readiness", c.ReadinessProbe, "/readyz")
	if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "http" && p.ContainerPort == 8080 }) ||
		!strings.Contains(strings.Join(c.Args, " "), "--addr=0.0.0.0:8080") && !strings.Contains(strings.Join(c.Args, " "), "--addr 0.0.0.0:8080") {
		t.Errorf("server: want port http 8080 and --addr 0.0.0.0:8080, got %v %v", c.Ports, c.Args)
	}
	if c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem {
		t.Error("server: want a read-only root filesystem")
	}
	services := 0
	for _, o := range objs {
		if svc, ok := o.obj.(*corev1.Service); ok {
			services++
			if !selects(svc.Spec.Selector, server.Spec.Template.Labels) {
				t.Errorf("%s selects %v, not the server's pods %v", o.where, svc.Spec.Selector, server.Spec.Template.Labels)
			}
		}
		if pdb, ok := o.obj.(*policyv1.PodDisruptionBudget); ok && !selects(pdb.Spec.Selector.MatchLabels, server.Spec.Template.Labels) {
			t.Errorf("%s does not select the server's pods", o.where)
		}
	}
	if services != 1 {
		t.Errorf("%d Services, want the server's", services)
	}

	// The agent: the NVIDIA runtime on GPU nodes, the host's PIDs and
	// cgroups, state on the host, the join token from a Secret.
	pod := agent.Spec.Template.Spec
	a := pod.Containers[0]
	if pod.RuntimeClassName == nil || *pod.RuntimeClassName != "nvidia" {
		t.Errorf("agent runtimeClassName %v, want nvidia", pod.RuntimeClassName)
	}
	if len(pod.NodeSelector) == 0 || !pod.HostPID {
		t.Errorf("agent: nodeSelector %v and hostPID %v: want GPU nodes only and the host's PIDs", pod.NodeSelector, pod.HostPID)
	}
	if a.Args[0] != "agent" || !slices.ContainsFunc(a.Args, func(s string) bool { return strings.HasPrefix(s, "--cgroup-root=/sys/fs/cgroup/") }) {
		t.Errorf("agent args %q: want gpucal agent with --cgroup-root under /sys/fs/cgroup", a.Args)
	}
	if !slices.ContainsFunc(a.Ports, func(p corev1.ContainerPort) bool { return p.Name == "metrics" && p.ContainerPort == 9400 }) {
		t.Errorf("agent ports %v: want metrics 9400 (the scrape config keeps ports named metrics)", a.Ports)
	}
	mounts := map[string]bool{}
	for _, m := range a.VolumeMounts {
		mounts[m.MountPath] = true
	}
	for _, want := range []string{"/sys/fs/cgroup", "/var/lib/gpucal-agent"} {
		if !mounts[want] {
			t.Errorf("agent mounts %v: want %s", slices.Sorted(maps.Keys(mounts)), want)
		}
	}
	joinToken := false
	for _, ef := range a.EnvFrom {
		if ef.SecretRef != nil && secrets[ef.SecretRef.Name]["GPUCAL_JOIN_TOKEN"] {
			joinToken = true
		}
	}
	if !joinToken {
		t.Error("agent: want GPUCAL_JOIN_TOKEN from a Secret (envFrom)")
	}
}

// checkPod checks what every pod of the kit needs: a selector that
// selects it, images, resource requests and limits, flags gpucal has,
// variables gpucal reads, Secrets that exist and volumes that are there.
func checkPod(t *testing.T, cli gpucalCLI, where string, sel *metav1.LabelSelector, tpl corev1.PodTemplateSpec, secrets map[string]map[string]bool) {
	t.Helper()
	if sel == nil || !selects(sel.MatchLabels, tpl.Labels) {
		t.Errorf("%s: selector %v does not select its pods %v", where, sel, tpl.Labels)
	}
	if tpl.Labels["app.kubernetes.io/name"] != "gpucal" || tpl.Labels["app.kubernetes.io/component"] == "" {
		t.Errorf("%s: pod labels %v: the scrape config selects on app.kubernetes.io/name=gpucal and a component", where, tpl.Labels)
	}
	volumes := map[string]bool{}
	for _, v := range tpl.Spec.Volumes {
		volumes[v.Name] = true
	}
	if len(tpl.Spec.Containers) == 0 {
		t.Fatalf("%s: no containers", where)
	}
	for _, c := range tpl.Spec.Containers {
		if c.Image == "" || strings.HasSuffix(c.Image, ":latest") || !strings.Contains(c.Image, ":") {
			t.Errorf("%s: container %s image %q: want a tagged image", where, c.Name, c.Image)
		}
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if _, ok := c.Resources.Limits[r]; !ok {
				t.Errorf("%s: container %s has no %s limit", where, c.Name, r)
			}
			if _, ok := c.Resources.Requests[r]; !ok {
				t.Errorf("%s: container %s has no %s request", where, c.Name, r)
			}
		}
		if len(c.Args) == 0 {
			t.Errorf("%s: container %s: want the gpucal command in args", where, c.Name)
		}
		cli.checkArgs(t, where, c.Args)
		for _, e := range c.Env {
			cli.checkEnv(t, where, e.Name)
		}
		for _, ef := range c.EnvFrom {
			if ef.SecretRef != nil && secrets[ef.SecretRef.Name] == nil {
				t.Errorf("%s: reads Secret %s, which the kit does not define", where, ef.SecretRef.Name)
			}
		}
		for _, m := range c.VolumeMounts {
			if !volumes[m.Name] {
				t.Errorf("%s: mounts volume %s, which the pod does not have", where, m.Name)
			}
		}
	}
}

func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// TestKubernetesManifests checks deploy/kubernetes: every object decodes
// strictly into its Kubernetes type, the kustomization lists the files
// that exist, and the objects make one deployment (checkKit).
func TestKubernetesManifests(t *testing.T) {
	cli := readCLI(t)
	var kust struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Namespace  string   `json:"namespace"`
		Resources  []string `json:"resources"`
	}
	b, err := os.ReadFile("kubernetes/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, &kust); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	var objs []object
	for _, r := range kust.Resources {
		b, err := os.ReadFile(filepath.Join("kubernetes", r))
		if err != nil {
			t.Fatalf("kustomization.yaml lists %s: %v", r, err)
		}
		objs = append(objs, decodeObjects(t, r, b)...)
	}
	for _, o := range objs {
		if o.kind != "Namespace" && o.meta.Namespace != kust.Namespace {
			t.Errorf("%s is in namespace %q, want %q", o.where, o.meta.Namespace, kust.Namespace)
		}
	}
	b, err = os.ReadFile("kubernetes/secrets.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	secrets := decodeObjects(t, "secrets.example.yaml", b)
	if files, _ := filepath.Glob("kubernetes/*.yaml"); len(files) != len(kust.Resources)+2 {
		t.Errorf("deploy/kubernetes has %v: each file but the kustomization and the example secrets should be in the kustomization", files)
	}
	checkKit(t, cli, objs, secrets)
}

// helmValuesRef is a reference to a chart value in a template.
var helmValuesRef = regexp.MustCompile(`\.Values((?:\.[A-Za-z_][A-Za-z0-9_]*)+)`)

// TestHelmChart checks deploy/helm/gpucal. Always: Chart.yaml and
// values.yaml parse and every .Values path a template reads is in
// values.yaml. Where helm is installed (it is not a Debian package; see
// deploy/README.md), `helm lint --strict` and `helm template`, whose
// objects then get the checks of the plain manifests.
func TestHelmChart(t *testing.T) {
	const chart = "helm/gpucal"
	var meta struct {
		APIVersion, Name, Version, AppVersion string
	}
	b, err := os.ReadFile(filepath.Join(chart, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &meta); err != nil || meta.APIVersion != "v2" || meta.Name != "gpucal" || meta.Version == "" || meta.AppVersion == "" {
		t.Errorf("Chart.yaml: %+v, %v", meta, err)
	}
	var values map[string]any
	b, err = os.ReadFile(filepath.Join(chart, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &values); err != nil {
		t.Fatalf("values.yaml: %v", err)
	}
	templates, _ := filepath.Glob(filepath.Join(chart, "templates", "*"))
	refs := 0
	for _, f := range templates {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range helmValuesRef.FindAllStringSubmatch(string(b), -1) {
			refs++
			var v any = values
			for _, key := range strings.Split(m[1][1:], ".") {
				mp, ok := v.(map[string]any)
				if !ok {
					t.Errorf("%s: .Values%s: %v is not a map", f, m[1], v)
					break
				}
				if v, ok = mp[key]; !ok {
					t.Errorf("%s reads .Values%s, which values.yaml does not have", f, m[1])
					break
				}
			}
		}
	}
	if refs < 30 {
		t.Errorf("%d .Values references in the templates: the scan is broken", refs)
	}

	helm, err := exec.LookPath("helm")
	if err != nil {
		t.Log("helm is not installed: the chart is not linted or rendered here (deploy/README.md says how to get helm)")
		return
	}
	lintValues := filepath.Join(chart, "ci", "lint-values.yaml")
	if out, err := exec.Command(helm, "lint", "--strict", chart, "-f", lintValues).CombinedOutput(); err != nil {
		t.Errorf("helm lint: %v\n%s", err, out)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(helm, "template", "gpucal", chart, "--namespace", "gpucal", "-f", lintValues)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr.String())
	}
	checkKit(t, readCLI(t), decodeObjects(t, "helm template", stdout.Bytes()), nil)

	// Without PostgreSQL, several replicas are refused.
	out, err := exec.Command(helm, "template", "gpucal", chart, "--set", "agent.joinToken=x").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "needs PostgreSQL") {
		t.Errorf("helm template with 2 replicas and no GPUCAL_DB: %v\n%s", err, out)
	}
}
