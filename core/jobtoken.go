package core

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"strconv"
	"strings"
)

// Job tokens (GPUCAL_JOB_TOKEN, docs/progress.md) let a running job report
// its own progress and do nothing else. A token names its job and carries
// an HMAC of the job and the start of its run under a key the server
// keeps in the database (so every replica, and a restarted server, checks
// it alike): it is valid while that run holds GPUs, and only then. Nothing
// is stored per token.

const jobTokenPrefix = "gpucal_job_"

// jobTokenKeyName is the setting the key is kept under.
const jobTokenKeyName = "job_token_key"

// jobTokenKey returns the key job tokens are signed with, making it on
// first use. It runs its own transaction: call it outside one.
func (s *Service) jobTokenKey(ctx context.Context) ([]byte, error) {
	s.keyMu.Lock()
	defer s.keyMu.Unlock()
	if s.jobKey != nil {
		return s.jobKey, nil
	}
	fresh := make([]byte, 32)
	rand.Read(fresh) // never fails on supported platforms (crypto/rand docs)
	var stored string
	err := s.store.Update(ctx, func(tx Tx) (err error) {
		stored, err = tx.EnsureSetting(ctx, jobTokenKeyName, hex.EncodeToString(fresh))
		return err
	})
	if err != nil {
		return nil, err
	}
	key, err := hex.DecodeString(stored)
	if err != nil || len(key) < 16 {
		return nil, Errorf(CodeInternal, "the stored job token key is not valid")
	}
	s.jobKey = key
	return key, nil
}

// jobToken is the token of j's current run.
func jobToken(key []byte, j Job) string {
	id := strconv.FormatInt(j.ID, 10)
	return jobTokenPrefix + id + "_" + jobTokenMAC(key, id, j.StartedAt.Unix())
}

func jobTokenMAC(key []byte, id string, started int64) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + ":" + strconv.FormatInt(started, 10)))
	return hex.EncodeToString(m.Sum(nil)[:20])
}

// IsJobToken reports whether a bearer token is a job token rather than an
// API token.
func IsJobToken(token string) bool { return strings.HasPrefix(token, jobTokenPrefix) }

// AuthenticateJob checks a job token and returns the job it may report
// for, as its owner may. It fails once the run it was issued for no
// longer holds GPUs.
func (s *Service) AuthenticateJob(ctx context.Context, token string) (int64, Actor, error) {
	bad := Errorf(CodeUnauthorized, "the job token is not valid (it is valid while its job runs)")
	rest, ok := strings.CutPrefix(token, jobTokenPrefix)
	idText, mac, ok2 := strings.Cut(rest, "_")
	id, err := strconv.ParseInt(idText, 10, 64)
	if !ok || !ok2 || err != nil || id <= 0 {
		return 0, Actor{}, bad
	}
	key, err := s.jobTokenKey(ctx)
	if err != nil {
		return 0, Actor{}, err
	}
	var j Job
	err = s.store.View(ctx, func(tx Tx) (err error) {
		j, err = tx.Job(ctx, id)
		return err
	})
	if ErrorCode(err) == CodeNotFound {
		return 0, Actor{}, bad
	}
	if err != nil {
		return 0, Actor{}, err
	}
	want := jobTokenMAC(key, idText, j.StartedAt.Unix())
	if !j.State.Holding() || subtle.ConstantTimeCompare([]byte(mac), []byte(want)) != 1 {
		return 0, Actor{}, bad
	}
	return id, Actor{User: j.Owner}, nil
}
