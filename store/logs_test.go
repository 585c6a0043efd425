package store

import (
	"context"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/uptrace/bun"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/store/storetest"
)

// readLog reads job's log in a View.
func (f *fixture) readLog(t testing.TB, job, offset, limit int64) ([]core.LogChunk, int64) {
	t.Helper()
	var chunks []core.LogChunk
	var size int64
	view(t, f.db, func(tx core.Tx) (err error) {
		chunks, size, err = tx.Log(context.Background(), job, offset, limit)
		return err
	})
	return chunks, size
}

func TestAppendLog(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		f := newFixture(t, dsn)
		ctx := context.Background()
		j := f.insertJob(t, newJob("alice", 1))
		other := f.insertJob(t, newJob("bob", 1))
		if chunks, size := f.readLog(t, j.ID, 0, 100); chunks != nil || size != 0 {
			t.Errorf("Log of a job without one = %v, %d; want nil, 0", chunks, size)
		}

		// Bytes that are not text, zeros included, come back as they went in.
		binary := []byte{0, 0xff, 0xfe, 'x', 0, '\n'}
		for _, tc := range []struct {
			name      string
			job       int64
			offset, n int64
			data      []byte
			size      int64 // the size it returns
			code      core.Code
			msg       string
		}{
			{"first chunk", j.ID, 0, 6, []byte("hello\n"), 6, "", ""},
			{"offset before the size", j.ID, 3, 3, []byte("lo\n"), 0, core.CodeConflict, "the log of j1 has 6 bytes, not 3"},
			{"offset after the size", j.ID, 10, 3, []byte("abc"), 0, core.CodeConflict, "the log of j1 has 6 bytes, not 10"},
			{"chunk mostly dropped", j.ID, 6, 1000, []byte("[1000 bytes, "), 1006, "", ""},
			{"chunk entirely dropped", j.ID, 1006, 10, nil, 1016, "", ""},
			{"binary chunk", j.ID, 1016, 6, binary, 1022, "", ""},
			{"empty chunk", j.ID, 1022, 0, nil, 1022, "", ""},
			{"empty chunk at a wrong offset", j.ID, 7, 0, nil, 0, core.CodeConflict, "the log of j1 has 1022 bytes, not 7"},
			{"more data than bytes", j.ID, 1022, 2, []byte("abc"), 0, core.CodeInvalid, ""},
			{"negative length", j.ID, 1022, -1, nil, 0, core.CodeInvalid, ""},
			{"negative offset", j.ID, -1, 1, nil, 0, core.CodeInvalid, ""},
			{"unknown job", 999, 0, 1, []byte("x"), 0, core.CodeNotFound, "job j999 not found"},
			{"another job's log starts at 0", other.ID, 0, 3, []byte("bye"), 3, "", ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var size int64
				err := f.db.Update(ctx, func(tx core.Tx) (err error) {
					size, err = tx.AppendLog(ctx, tc.job, tc.offset, tc.n, tc.data)
					return err
				})
				if tc.code != "" {
					wantCode(t, err, tc.code, tc.msg)
					return
				}
				if err != nil {
					t.Fatalf("AppendLog: %v", err)
				}
				if size != tc.size {
					t.Errorf("AppendLog returned size %d, want %d", size, tc.size)
				}
			})
		}

		hello := core.LogChunk{Offset: 0, N: 6, Data: []byte("hello\n")}
		dropped := core.LogChunk{Offset: 6, N: 1000, Data: []byte("[1000 bytes, ")}
		gone := core.LogChunk{Offset: 1006, N: 10}
		bin := core.LogChunk{Offset: 1016, N: 6, Data: binary}
		for _, tc := range []struct {
			name          string
			offset, limit int64
			want          []core.LogChunk
		}{
			{"everything", 0, 1 << 62, []core.LogChunk{hello, dropped, gone, bin}},
			{"inside the first chunk", 2, 3, []core.LogChunk{hello}},
			{"the first chunk exactly", 0, 6, []core.LogChunk{hello}},
			{"from a chunk's start", 6, 1, []core.LogChunk{dropped}},
			{"across a boundary", 5, 2, []core.LogChunk{hello, dropped}},
			{"inside the dropped bytes", 500, 510, []core.LogChunk{dropped, gone}},
			{"the tail", 1020, 100, []core.LogChunk{bin}},
			{"at the size", 1022, 100, nil},
			{"past the size", 5000, 100, nil},
			{"no bytes", 3, 0, nil},
			{"the largest limit", 1, 1<<63 - 1, []core.LogChunk{hello, dropped, gone, bin}},
		} {
			t.Run("log "+tc.name, func(t *testing.T) {
				got, size := f.readLog(t, j.ID, tc.offset, tc.limit)
				if size != 1022 {
					t.Errorf("Log size = %d, want 1022", size)
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("Log(%d, %d) (-want +got):\n%s", tc.offset, tc.limit, diff)
				}
			})
		}

		if got, size := f.readLog(t, other.ID, 0, 10); size != 3 || len(got) != 1 || string(got[0].Data) != "bye" {
			t.Errorf("the other job's log = %v, %d; want its one chunk", got, size)
		}
		for _, tc := range []struct {
			name          string
			job           int64
			offset, limit int64
			code          core.Code
		}{
			{"unknown job", 999, 0, 10, core.CodeNotFound},
			{"negative offset", j.ID, -1, 10, core.CodeInvalid},
			{"negative limit", j.ID, 0, -1, core.CodeInvalid},
		} {
			t.Run("log "+tc.name, func(t *testing.T) {
				err := f.db.View(ctx, func(tx core.Tx) error { _, _, err := tx.Log(ctx, tc.job, tc.offset, tc.limit); return err })
				wantCode(t, err, tc.code, "")
			})
		}
	})
}

// TestConcurrentAppendLog has 20 goroutines append a chunk at the same
// offset at once: exactly one may win, and the log holds its chunk only.
// The second round bypasses Update and its lock on the job's row: the
// primary key alone must then refuse the losers, as conflicts too.
func TestConcurrentAppendLog(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		f := newFixture(t, dsn)
		ctx := context.Background()
		j := f.insertJob(t, newJob("alice", 1))
		const n = 20
		var want []core.LogChunk
		for round, tc := range []struct {
			name   string
			offset int64
			run    func(fn func(core.Tx) error) error
		}{
			{"through Update", 0, func(fn func(core.Tx) error) error { return f.db.Update(ctx, fn) }},
			{"without the job lock", 4, func(fn func(core.Tx) error) error {
				return f.db.write.RunInTx(ctx, nil, func(ctx context.Context, btx bun.Tx) error { return fn(&tx{db: btx}) })
			}},
		} {
			chunk := func(w int) []byte { return []byte{byte('a' + w), byte('0' + round), ' ', '\n'} }
			errs := make([]error, n)
			var wg sync.WaitGroup
			for w := range n {
				wg.Go(func() {
					errs[w] = tc.run(func(tx core.Tx) error {
						_, err := tx.AppendLog(ctx, j.ID, tc.offset, 4, chunk(w))
						return err
					})
				})
			}
			wg.Wait()
			winner := -1
			for w, err := range errs {
				switch core.ErrorCode(err) {
				case "":
					if winner >= 0 {
						t.Errorf("%s: appends %d and %d both won", tc.name, winner, w)
					}
					winner = w
				case core.CodeConflict:
				default:
					t.Errorf("%s: AppendLog: %v, want success or a conflict", tc.name, err)
				}
			}
			if winner < 0 {
				t.Fatalf("%s: no append won", tc.name)
			}
			want = append(want, core.LogChunk{Offset: tc.offset, N: 4, Data: chunk(winner)})
		}
		got, size := f.readLog(t, j.ID, 0, 100)
		if size != 8 {
			t.Errorf("size %d after two rounds, want 8", size)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Log (-want +got):\n%s", diff)
		}
	})
}

// TestPruneLogs: the logs of jobs that ended before the cut go, others stay.
func TestPruneLogs(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		f := newFixture(t, dsn)
		ctx := context.Background()
		old, running := f.insertJob(t, newJob("alice", 1)).ID, f.insertJob(t, newJob("alice", 1)).ID
		for _, id := range []int64{old, running} {
			update(t, f.db, func(tx core.Tx) error { _, err := tx.AppendLog(ctx, id, 0, 3, []byte("hi\n")); return err })
		}
		update(t, f.db, func(tx core.Tx) error {
			j, err := tx.Job(ctx, old)
			if err != nil {
				return err
			}
			j.State, j.EndedAt = core.JobSucceeded, hours(1)
			return tx.UpdateJob(ctx, j)
		})
		var n int64
		update(t, f.db, func(tx core.Tx) (err error) { n, err = tx.PruneLogs(ctx, hours(2)); return err })
		if n != 1 {
			t.Errorf("pruned %d chunks, want 1", n)
		}
		for id, want := range map[int64]int64{old: 0, running: 3} {
			view(t, f.db, func(tx core.Tx) error {
				_, size, err := tx.Log(ctx, id, 0, 10)
				if size != want {
					t.Errorf("j%d's log: %d bytes, want %d", id, size, want)
				}
				return err
			})
		}
		update(t, f.db, func(tx core.Tx) (err error) {
			if err := tx.InsertJoinToken(ctx, core.JoinToken{Hash: "h1", CreatedBy: "alice", CreatedAt: hours(0), ExpiresAt: hours(1)}); err != nil {
				return err
			}
			n, err = tx.PruneJoinTokens(ctx, hours(2))
			return err
		})
		if n != 1 {
			t.Errorf("pruned %d join tokens, want 1", n)
		}
	})
}
