package gpu

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// MaxFakeGPUs bounds how many simulated GPUs one agent may have, so a typo
// such as 800xH100 is caught instead of simulating a warehouse.
const MaxFakeGPUs = 64

// FakeGPU asks for Count simulated GPUs of one model.
type FakeGPU struct {
	Count int
	Model string // one of FakeModels(), spelled as there
}

// String gives the spec form, "8xH100".
func (g FakeGPU) String() string { return strconv.Itoa(g.Count) + "x" + g.Model }

// fakeModels are the models --fake-gpus knows, in the spelling ParseFake
// returns.
var fakeModels = []string{"H100", "H200", "B200", "A100-40GB", "A100-80GB", "A30"}

// FakeModels returns the models --fake-gpus knows, in the spelling ParseFake
// returns. Each is backed by one of go-nvml's mock GPU definitions, which
// give it its NVML name and memory size (docs/agent.md lists them).
func FakeModels() []string { return slices.Clone(fakeModels) }

// FormatFake is the inverse of ParseFake: "8xH100,2xA100-80GB".
func FormatFake(gpus []FakeGPU) string {
	parts := make([]string, len(gpus))
	for i, g := range gpus {
		parts[i] = g.String()
	}
	return strings.Join(parts, ",")
}

// ParseFake reads a --fake-gpus value: a comma-separated list of COUNTxMODEL
// ("8xH100", "8xH100,2xA100-80GB"); a bare MODEL means one GPU. Models are
// matched without regard to case. The total must be between 1 and
// MaxFakeGPUs.
func ParseFake(spec string) ([]FakeGPU, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, fmt.Errorf("--fake-gpus is empty; give COUNTxMODEL, for example 8xH100")
	}
	var gpus []FakeGPU
	total := 0
	for item := range strings.SplitSeq(spec, ",") {
		g, err := parseFakeItem(strings.TrimSpace(item))
		if err != nil {
			return nil, fmt.Errorf("--fake-gpus %q: %w", spec, err)
		}
		total += g.Count
		if total > MaxFakeGPUs {
			return nil, fmt.Errorf("--fake-gpus %q asks for more than %d GPUs; one agent simulates at most %d", spec, MaxFakeGPUs, MaxFakeGPUs)
		}
		gpus = append(gpus, g)
	}
	return gpus, nil
}

// parseFakeItem reads one COUNTxMODEL.
func parseFakeItem(item string) (FakeGPU, error) {
	if item == "" {
		return FakeGPU{}, fmt.Errorf("empty item; give COUNTxMODEL, for example 8xH100")
	}
	count, model := "1", item
	if i := strings.IndexAny(item, "xX"); i > 0 && isDigits(item[:i]) {
		count, model = item[:i], item[i+1:]
	}
	n, err := strconv.Atoi(count)
	if err != nil || n < 1 || n > MaxFakeGPUs {
		return FakeGPU{}, fmt.Errorf("%q: the count must be a whole number from 1 to %d", item, MaxFakeGPUs)
	}
	canonical, err := fakeModel(model)
	if err != nil {
		return FakeGPU{}, fmt.Errorf("%q: %w", item, err)
	}
	return FakeGPU{Count: n, Model: canonical}, nil
}

// fakeModel returns the FakeModels spelling of name.
func fakeModel(name string) (string, error) {
	i := slices.IndexFunc(fakeModels, func(m string) bool { return strings.EqualFold(m, name) })
	if i >= 0 {
		return fakeModels[i], nil
	}
	if strings.EqualFold(name, "A100") {
		return "", fmt.Errorf("say A100-40GB or A100-80GB")
	}
	return "", fmt.Errorf("unknown model %q; known models are %s", name, strings.Join(fakeModels, ", "))
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}
