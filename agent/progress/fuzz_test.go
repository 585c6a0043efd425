package progress

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// seedLines are lines of every kind ParseLine reads, and some it must not.
func seedLines() []string {
	return []string{
		"  45%|████▌     | 450/1000 [01:23<01:40,  5.48it/s]",
		"Training:  45%|\x1b[32m####5     \x1b[39m| 450/1000 [01:23<01:40,  1.20s/it]",
		"450it [01:23, 5.48it/s]",
		"Epoch 2:  45%|████▌     | 120/267 [00:10<00:12, 11.2it/s, v_num=0, loss=0.5]",
		"Epoch 2/9 ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 120/267 0:00:10 • 0:00:12 11.20it/s loss: 0.5",
		"Epoch 0/10:  24%|██▍       | 120/500 [00:10<00:31, 12.00it/s]",
		"{'loss': 0.52, 'grad_norm': 1.3, 'learning_rate': 4.5e-05, 'epoch': 0.27}",
		"Epoch 3/10",
		"120/500 [=====>........................] - ETA: 1:02 - loss: 0.4123 - accuracy: 0.8812",
		"\x1b[1m120/500\x1b[0m \x1b[32m━━━━━━━━━━━━━━━━━━━━\x1b[0m 12s 24ms/step - loss: 0.4123",
		"1875/1875 - 4s - 2ms/step - accuracy: 0.8778",
		"loaded 3/4 shards", "2024/05/01 12:00:00", "GPU 1/8 ready", "|  45%| a | 3/4 |",
	}
}

func FuzzParseLine(f *testing.F) {
	for _, l := range seedLines() {
		f.Add(l)
	}
	f.Fuzz(func(t *testing.T, line string) {
		r, ok := ParseLine(line)
		if !ok {
			if r != (Report{}) {
				t.Errorf("ParseLine(%q) = %+v with ok false", line, r)
			}
			return
		}
		if err := checkReport(r); err != nil {
			t.Errorf("ParseLine(%q) = %+v: %v", line, r, err)
		}
	})
}

// FuzzParser checks the reports' invariants and that they do not depend on
// how the output is cut into writes. The seeds are the start of each
// testdata log: small inputs keep the fuzzer fast, and minimizing a new
// input short.
func FuzzParser(f *testing.F) {
	logs, _ := filepath.Glob("testdata/*.log")
	for _, path := range logs {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data[:min(len(data), 1024)], uint64(1))
	}
	f.Add([]byte(strings.Join(seedLines(), "\r")), uint64(2))
	f.Add([]byte(chunkSample), uint64(3))
	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		whole := reportsOf(data)
		for _, r := range whole {
			if err := checkReport(r); err != nil {
				t.Fatalf("report %+v: %v", r, err)
			}
		}
		if got := reportsOf(randomPieces(data, seed)...); !slices.Equal(got, whole) {
			t.Errorf("in pieces (seed %d): reports\n%q\nwant\n%q", seed, briefs(got), briefs(whole))
		}
	})
}

func FuzzParseFile(f *testing.F) {
	for _, s := range []string{
		`{"fraction":0.42}`, `{"step":120,"total":1000}`, "0.42", "42%", "120/1000",
		"0.1\n0.2\n", "1.5", `{"fraction":1e400}`, `{"step":-1,"total":0}`, "", "\ufeff", "9/9\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseFile(data)
		if err != nil {
			if r != (Report{}) {
				t.Errorf("ParseFile(%q) = %+v with error %v", data, r, err)
			}
			return
		}
		if err := checkReport(r); err != nil || r.Format != FormatFile {
			t.Errorf("ParseFile(%q) = %+v: %v", data, r, err)
		}
	})
}
