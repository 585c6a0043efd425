package progress

import "testing"

func TestParseLine(t *testing.T) {
	tests := []struct {
		name string
		line string
		want Report
	}{
		// tqdm, and the Hugging Face Trainer's bar, which is one.
		{"tqdm", "  45%|████▌     | 450/1000 [01:23<01:40,  5.48it/s]",
			Report{Fraction: 0.45, Step: 450, Total: 1000, Rate: 5.48, Format: FormatTqdm}},
		{"tqdm seconds per step", "Training:  45%|████▌     | 450/1000 [01:23<01:40,  1.25s/it]",
			Report{Fraction: 0.45, Step: 450, Total: 1000, Rate: 0.8, Format: FormatTqdm}},
		{"tqdm before the first step", "  0%|          | 0/1000 [00:00<?, ?it/s]",
			Report{Fraction: 0, Step: 0, Total: 1000, Format: FormatTqdm}},
		{"tqdm done", "100%|██████████| 1000/1000 [03:02<00:00,  5.48it/s]",
			Report{Fraction: 1, Step: 1000, Total: 1000, Rate: 5.48, Format: FormatTqdm}},
		{"tqdm ascii", " 45%|####5     | 450/1000 [01:23<01:40,  5.48it/s]",
			Report{Fraction: 0.45, Step: 450, Total: 1000, Rate: 5.48, Format: FormatTqdm}},
		{"tqdm coloured", "Training:  45%|\x1b[32m████▌     \x1b[39m| 450/1000 [01:23<01:40,  5.48it/s]",
			Report{Fraction: 0.45, Step: 450, Total: 1000, Rate: 5.48, Format: FormatTqdm}},
		{"tqdm with postfix", " 45%|████▌     | 450/1000 [01:23<01:40,  5.48batch/s, loss=0.5]",
			Report{Fraction: 0.45, Step: 450, Total: 1000, Rate: 5.48, Format: FormatTqdm}},
		{"tqdm without brackets", " 45%|████▌     | 450/1000",
			Report{Fraction: 0.45, Step: 450, Total: 1000, Format: FormatTqdm}},
		{"tqdm after a log prefix", "[rank0]: Training:  45%|████▌     | 450/1000 [01:23<01:40,  5.48it/s]",
			Report{Fraction: 0.45, Step: 450, Total: 1000, Rate: 5.48, Format: FormatTqdm}},
		{"hugging face trainer", "  9%|▉         | 450/5000 [01:23<14:00,  5.41it/s]",
			Report{Fraction: 0.09, Step: 450, Total: 5000, Rate: 5.41, Format: FormatTqdm}},
		{"datasets map", "Map:  40%|████      | 10000/25000 [00:01<00:01, 9512.31 examples/s]",
			Report{Fraction: 0.4, Step: 10000, Total: 25000, Rate: 9512.31, Format: FormatTqdm}},
		{"script epoch", "Epoch 3/10:  24%|██▍       | 120/500 [00:10<00:31, 12.00it/s]",
			Report{Fraction: 0.224, Step: 120, Total: 500, Epoch: 3, Epochs: 10, Rate: 12, Format: FormatTqdm}},
		{"script epoch 0", "Epoch 0/10:  24%|██▍       | 120/500 [00:10<00:31, 12.00it/s]",
			Report{Fraction: 0.024, Step: 120, Total: 500, Epoch: 1, Epochs: 10, Rate: 12, Format: FormatTqdm}},
		{"script epoch without count", "train epoch 3:  24%|██▍       | 120/500 [00:10<00:31, 12.00it/s]",
			Report{Fraction: 0.24, Step: 120, Total: 500, Epoch: 3, Rate: 12, Format: FormatTqdm}},

		// PyTorch Lightning.
		{"lightning tqdm", "Epoch 2:  45%|████▌     | 120/267 [00:10<00:12, 11.2it/s, v_num=0, loss=0.5]",
			Report{Fraction: 120.0 / 267, Step: 120, Total: 267, Epoch: 3, Rate: 11.2, Format: FormatLightning}},
		{"lightning tqdm validation", "Validation DataLoader 0:  40%|████      | 20/50 [00:00<00:01, 25.00it/s]",
			Report{Fraction: 0.4, Step: 20, Total: 50, Rate: 25, Format: FormatLightning}},
		{"lightning rich", "Epoch 2/9 ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 120/267 0:00:10 • 0:00:12 11.20it/s loss: 0.5",
			Report{Fraction: (2 + 120.0/267) / 10, Step: 120, Total: 267, Epoch: 3, Epochs: 10, Rate: 11.2, Format: FormatLightning}},
		{"lightning rich coloured", "\x1b[37mEpoch 0/0\x1b[0m \x1b[38;2;98;6;224m━━━━━━━━━━━━━━━━━━━━╸\x1b[0m\x1b[38;5;237m━━━━━━━━━━━━━━━━━━━\x1b[0m \x1b[37m134/267\x1b[0m \x1b[38;5;245m0:00:11 • 0:00:11\x1b[0m \x1b[38;5;249m11.20it/s\x1b[0m",
			Report{Fraction: 134.0 / 267, Step: 134, Total: 267, Epoch: 1, Epochs: 1, Rate: 11.2, Format: FormatLightning}},
		{"lightning rich without max_epochs", "Epoch 4 ━━━━━━━━━━╺━━━━━━━━━ 120/267 0:00:10 • 0:00:12 11.20it/s",
			Report{Fraction: 120.0 / 267, Step: 120, Total: 267, Epoch: 5, Rate: 11.2, Format: FormatLightning}},
		{"lightning rich without an epoch limit", "Epoch 4/-2 ━━━━━━━━━━╺━━━━━━━━━ 120/267 0:00:10 • 0:00:12 11.20it/s",
			Report{Fraction: 120.0 / 267, Step: 120, Total: 267, Epoch: 5, Rate: 11.2, Format: FormatLightning}},
		{"lightning rich validation", "Validation ━━━━━━━━━━━━━━━━━━━━ 10/50 0:00:01 • 0:00:04 12.00it/s",
			Report{Fraction: 0.2, Step: 10, Total: 50, Rate: 12, Format: FormatLightning}},

		// Keras.
		{"keras header", "Epoch 3/10",
			Report{Fraction: 0.2, Epoch: 3, Epochs: 10, Format: FormatKeras}},
		{"keras header counted from 0", "Epoch 0/10",
			Report{Fraction: 0, Epoch: 1, Epochs: 10, Format: FormatKeras}},
		{"keras 2", "120/500 [=====>........................] - ETA: 1:02 - loss: 0.4123 - accuracy: 0.8812",
			Report{Fraction: 0.24, Step: 120, Total: 500, Format: FormatKeras}},
		{"keras 2 aligned", " 32/500 [=>............................] - ETA: 11s - loss: 0.4123",
			Report{Fraction: 32.0 / 500, Step: 32, Total: 500, Format: FormatKeras}},
		{"keras 2 end of epoch", "500/500 [==============================] - 12s 24ms/step - loss: 0.4123 - val_loss: 0.3901",
			Report{Fraction: 1, Step: 500, Total: 500, Rate: 1 / 0.024, Format: FormatKeras}},
		{"keras 3", "120/500 ━━━━━━━━━━━━━━━━━━━━ 12s 24ms/step - loss: 0.4123",
			Report{Fraction: 0.24, Step: 120, Total: 500, Rate: 1 / 0.024, Format: FormatKeras}},
		{"keras 3 coloured", "\x1b[1m120/500\x1b[0m \x1b[32m━━━━\x1b[0m\x1b[37m━━━━━━━━━━━━━━━━\x1b[0m \x1b[1m9s\x1b[0m 24ms/step - loss: 0.4123",
			Report{Fraction: 0.24, Step: 120, Total: 500, Rate: 1 / 0.024, Format: FormatKeras}},
		{"keras verbose 2", "1875/1875 - 4s - 2ms/step - accuracy: 0.8778 - loss: 0.4308",
			Report{Fraction: 1, Step: 1875, Total: 1875, Rate: 500, Format: FormatKeras}},
		{"keras 2 verbose 2", "1875/1875 - 3s - loss: 0.2965 - accuracy: 0.9140 - 3s/epoch - 2ms/step",
			Report{Fraction: 1, Step: 1875, Total: 1875, Rate: 500, Format: FormatKeras}},

		// One line holding several drawings.
		{"redrawn", "  0%|          | 0/1000 [00:00<?, ?it/s]\r 45%|████▌     | 450/1000 [01:23<01:40,  5.48it/s]\r\n",
			Report{Fraction: 0.45, Step: 450, Total: 1000, Rate: 5.48, Format: FormatTqdm}},
		{"keras backspaces", "120/500 [=====>........................] - ETA: 1:02\b\b\b\b\b\b\b\b\b\b",
			Report{Fraction: 0.24, Step: 120, Total: 500, Format: FormatKeras}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseLine(tt.line)
			if !ok {
				t.Fatalf("ParseLine(%q) reports nothing, want %+v", tt.line, tt.want)
			}
			if d := diffReport(got, tt.want); d != "" {
				t.Errorf("ParseLine(%q):\n%s", tt.line, d)
			}
		})
	}
}

// TestParseLineNone lists lines that look a little like progress and are
// not, or whose numbers cannot be a job's progress.
func TestParseLineNone(t *testing.T) {
	tests := []struct{ name, line string }{
		{"empty", ""},
		{"shards", "loaded 3/4 shards"},
		{"shards first", "3/4 shards loaded"},
		{"date", "2024/05/01 12:00:00 starting job j42"},
		{"american date", "12/5/2024 - 3s - nothing"},
		{"gpu", "GPU 1/8 ready"},
		{"rank", "rank 0/8 joined"},
		{"script step", "step 450/5000 loss=2.31 lr=3.0e-4"},
		{"epoch with more", "Epoch 3/10 finished: loss 0.41"},
		{"hugging face log dict", "{'loss': 0.52, 'grad_norm': 1.3, 'learning_rate': 4.5e-05, 'epoch': 0.27}"},
		{"hugging face summary", "{'train_runtime': 924.2, 'train_steps_per_second': 5.41, 'train_loss': 0.91, 'epoch': 3.0}"},
		{"markdown table", "|  45%| acc | 3/4 |"},
		{"url", "see https://example.com/a/b 45%|x|"},
		{"tqdm without total", "450it [01:23, 5.48it/s]"},
		{"tqdm without total, described", "Training: 450it [01:23,  5.48it/s]"},
		{"lightning without total", "Training: |          | 0/? [00:00<?, ?it/s]"},
		{"tqdm scaled download", "model.safetensors:  45%|████▌     | 2.24G/4.98G [00:10<00:12, 224MB/s]"},
		{"tqdm zero total", "  0%|          | 0/0 [00:00<?, ?it/s]"},
		{"tqdm past total", "110%|██████████| 1100/1000 [03:40<00:00,  4.99it/s]"},
		{"tqdm percentage disagrees", " 90%|█████████ | 450/1000 [01:23<01:40,  5.48it/s]"},
		{"tqdm foreign bar", " 45%|=====>    | 450/1000 [01:23<01:40,  5.48it/s]"},
		{"tqdm huge counts", " 50%|█████     | 99999999999999999999/199999999999999999998"},
		{"tqdm epoch past count", "Epoch 11/10:  24%|██▍       | 120/500"},
		{"tqdm huge epoch", "Epoch 99999999999:  24%|██▍       | 120/500"},
		{"rich percentage", "Working... ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 100% 0:00:00"},
		{"rich past total", "Epoch 2/9 ━━━━━━━━━━ 300/267 0:00:10 • 0:00:12 11.20it/s"},
		{"rich epoch past count", "Epoch 10/9 ━━━━━━━━━━ 120/267 0:00:10 • 0:00:12 11.20it/s"},
		{"keras past total", "600/500 [==============================] - 12s 24ms/step"},
		{"keras zero total", "0/0 [..............................] - ETA: 0s"},
		{"header zero count", "Epoch 0/0"},
		{"header past count", "Epoch 11/10"},
		{"header huge", "Epoch 5/99999999999999999999"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, ok := ParseLine(tt.line); ok {
				t.Errorf("ParseLine(%q) = %+v, want no report", tt.line, got)
			}
		})
	}
}

func TestParseRate(t *testing.T) {
	for in, want := range map[string]float64{
		"5.48it/s":           5.48,
		" 5.48it/s":          5.48,
		"1.25s/it":           0.8,
		"9512.31 examples/s": 9512.31,
		"24ms/step":          1 / 0.024,
		"500us/step":         2000,
		"500µs/step":         2000,
		"?it/s":              0,
		"0.00s/it":           0,
		"5.48":               0,
		"3/4":                0,
		"5.48h/it":           0,
		"":                   0,
	} {
		if got := parseRate(in); got != want && (want == 0 || diffReport(Report{Rate: got}, Report{Rate: want}) != "") {
			t.Errorf("parseRate(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestClean(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "  45%|  ", "45%|"},
		{"colour", "\x1b[32m━━\x1b[0m\x1b[37m━\x1b[0m", "━━━"},
		{"truecolour", "\x1b[38;2;98;6;224mEpoch\x1b[0m", "Epoch"},
		{"cursor up", "bar\x1b[A", "bar"},
		{"private mode", "\x1b[?25lbar\x1b[?25h", "bar"},
		{"hyperlink", "\x1b]8;;https://x.org\x07link\x1b]8;;\x1b\\ text", "link text"},
		{"charset", "\x1b(Bbar", "bar"},
		{"keypad", "\x1b=bar", "bar"},
		{"cut short", "bar\x1b[38;5", "bar"},
		{"lone escape", "bar\x1b", "bar"},
		{"sequence ended by another character", "\x1b[3ébar", "ébar"},
		{"backspaces", "bar\b\b\b", "bar"},
		{"tab", "a\tb", "a b"},
		{"bell and delete", "a\x07\x7fb", "ab"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := clean(tt.in); got != tt.want {
				t.Errorf("clean(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if got := clean([]byte(tt.in)); got != tt.want {
				t.Errorf("clean([]byte(%q)) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
