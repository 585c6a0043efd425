package core

import (
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Model is a normalised GPU model: a family such as "a100" and, when known,
// the memory size such as "80gb". Requests may name a family ("a100") or an
// exact model ("a100-80gb"); GPUs always carry both when their memory is known.
type Model struct {
	Family string // "a100", "h100", "l40s", "rtx4090"
	Memory string // "80gb", or "" when unknown
}

// String returns "family-memory", or just the family when the memory is unknown.
func (m Model) String() string {
	if m.Memory == "" {
		return m.Family
	}
	return m.Family + "-" + m.Memory
}

// IsZero reports whether m names no model ("any GPU").
func (m Model) IsZero() bool { return m.Family == "" }

// Matches reports whether a GPU of model gpu satisfies a request for m.
// The zero Model matches every GPU; a family matches every size of it.
func (m Model) Matches(gpu Model) bool {
	if m.IsZero() {
		return true
	}
	if m.Family != gpu.Family {
		return false
	}
	return m.Memory == "" || m.Memory == gpu.Memory
}

var (
	vendorWords = map[string]bool{"nvidia": true, "tesla": true, "geforce": true, "quadro": true, "gpu": true, "gpus": true}
	memoryToken = regexp.MustCompile(`^(\d{1,4})g(b|ib)?$`)
	familyToken = regexp.MustCompile(`^[a-z]{1,4}\d{1,5}[a-z]{0,3}$`)
	anyModel    = map[string]bool{"": true, "any": true, "gpu": true, "gpus": true}
)

// standard memory sizes, in GB, used to name a GPU whose model string omits
// its size (NVML reports a little less than the marketing size).
var standardSizes = []int{8, 10, 12, 16, 20, 24, 32, 40, 48, 64, 80, 94, 96, 141, 144, 180, 192, 288}

// ParseModel normalises a GPU model as NVML or a person writes it:
// "NVIDIA A100-SXM4-80GB", "a100 80gb", "H100", "rtx 4090". It returns the
// zero Model for "", "any" and "gpu", and ok=false when the text names no model.
func ParseModel(s string) (m Model, ok bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	if anyModel[s] {
		return Model{}, true
	}
	tokens := strings.FieldsFunc(s, func(r rune) bool {
		return r == ' ' || r == '-' || r == '_' || r == '/' || r == '(' || r == ')' || r == ','
	})
	for i := 0; i < len(tokens); i++ {
		t := tokens[i]
		switch {
		case vendorWords[t]:
		case memoryToken.MatchString(t):
			if m.Memory == "" {
				m.Memory = memoryToken.FindStringSubmatch(t)[1] + "gb"
			}
		case t == "rtx" && i+1 < len(tokens) && isDigits(tokens[i+1]) && familyToken.MatchString(t+tokens[i+1]) && m.Family == "":
			m.Family = "rtx" + tokens[i+1]
			i++
		case familyToken.MatchString(t) && m.Family == "":
			m.Family = t
		}
	}
	if m.Family == "" {
		return Model{}, false
	}
	return m, true
}

// GPUModel returns the normalised model of a GPU from its NVML name and its
// total memory in MiB; the memory fills in the size when the name lacks it.
func GPUModel(name string, memoryMiB int64) Model {
	m, ok := ParseModel(name)
	if !ok {
		m = Model{Family: strings.ToLower(strings.Join(strings.Fields(name), ""))}
	}
	if m.Memory == "" && memoryMiB > 0 {
		if gb := nearestSize(float64(memoryMiB) / 1024); gb > 0 {
			m.Memory = strconv.Itoa(gb) + "gb"
		}
	}
	return m
}

// nearestSize returns the standard size within 10 % of gib, or 0.
func nearestSize(gib float64) int {
	best, bestErr := 0, 0.10
	for _, s := range standardSizes {
		if e := math.Abs(gib-float64(s)) / float64(s); e <= bestErr {
			best, bestErr = s, e
		}
	}
	return best
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
