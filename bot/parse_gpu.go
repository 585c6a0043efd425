package bot

import (
	"regexp"
	"strings"

	"github.com/gpucal/gpucal/core"
)

// GPU specs in the shapes people type: "4 a100", "4xA100", "4 x a100-80gb",
// "A100 x4", "4张A100", "四张H100", "8卡H100", "2 gpus", "两卡", "两张卡",
// or a model alone ("a100"). The model goes through core.ParseModel.
const modelPattern = `(?:rtx\s?\d{4}[a-z]{0,2}|[a-z]{1,10}\d{1,6}[a-z]{0,3}?)(?:[-\s]?\d{2,3}\s?gi?b?\b)?`

const countPattern = `\d{1,5}|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|sixteen|an?`

var gpuShapes = []*regexp.Regexp{
	// 4张A100, 四张H100, 8卡H100, 两卡, 两张卡, 4块GPU
	regexp.MustCompile(`(\d{1,5}|` + zhNumberPattern + `)\s*(?:(?:张|块|台|个)\s*(?:显卡|卡|gpus?)?|显卡|卡)(?:\s*\b(` + modelPattern + `)\b)?`),
	// A100 x4, a100x4, H100×8
	regexp.MustCompile(`\b(` + modelPattern + `)\s*[x×*]\s*(\d{1,5})\b`),
	// 4 a100, 4xA100, 4 x a100, an h100
	regexp.MustCompile(`\b(` + countPattern + `)(?:\s*[x×*]\s*|\s+)(` + modelPattern + `)\b(?:\s*(?:gpus?|cards?))?`),
	// 4a100
	regexp.MustCompile(`\b(\d{1,5})(` + modelPattern + `)\b(?:\s*(?:gpus?|cards?))?`),
	// 2 gpus, 2x gpu, 2 cards
	regexp.MustCompile(`\b(` + countPattern + `)\s*(?:[x×*]\s*)?(?:gpus?|cards?)\b`),
	// a100 alone
	regexp.MustCompile(`\b(` + modelPattern + `)\b(?:\s*(?:gpus?|cards?))?`),
}

// gpuRead is the GPU spec found in the text.
type gpuRead struct {
	found      bool
	count      int    // 0: not said
	model      string // normalised; "" for any
	badModel   string // a model word core.ParseModel refused
	badCount   string // a count out of range
	unreadable bool
}

// maxGPUs bounds a count: more GPUs than any cluster gpucal serves.
const maxGPUs = 4096

// readGPUs finds the first GPU spec in s, in the order of gpuShapes, and
// blanks it.
func readGPUs(s *string) gpuRead {
	var r gpuRead
	for i, re := range gpuShapes {
		take(s, re, func(g []string) bool {
			if r.found {
				return false
			}
			var count, model string
			if i == 0 && g[1] == "" {
				return false // the Chinese number matched nothing
			}
			switch i {
			case 0, 2, 3, 4:
				count = g[1]
				if len(g) > 2 {
					model = g[2]
				}
			case 1:
				model, count = g[1], g[2]
			case 5:
				model = g[1]
				if isID(model) {
					return false
				}
			}
			if count != "" {
				n := number(count)
				if n < 1 || n > maxGPUs {
					r.badCount = count
				}
				r.count = n
			}
			if model != "" {
				m, ok := core.ParseModel(model)
				if !ok {
					r.badModel = model
				}
				r.model = m.String()
			}
			r.found = true
			return true
		})
	}
	return r
}

var idPattern = regexp.MustCompile(`^[rj]\d+$`)

// isID reports whether a word is a reservation or job ID (r42, j7), which a
// lone model pattern would otherwise read as a GPU.
func isID(s string) bool { return idPattern.MatchString(strings.TrimSpace(s)) }

// displayModel writes a normalised model as people read it: "A100-80GB".
func displayModel(m string) string { return strings.ToUpper(m) }
