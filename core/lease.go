package core

import (
	"context"
	"time"
)

// Lease is a named lease held by one server replica until Expires: the
// replicas of one site elect their leader by taking the lease "leader"
// (DESIGN §3, scale path). Term counts the holders the lease has had.
type Lease struct {
	Name    string
	Holder  string
	Term    int64
	Expires time.Time
}

// Held reports whether holder holds l at now.
func (l Lease) Held(holder string, now time.Time) bool {
	return l.Holder == holder && now.Before(l.Expires)
}

// ClaimLease takes or renews the lease name for holder for ttl from now,
// unless another holder's lease is still running. It returns the lease as
// it is afterwards: Held(holder, now) says whether holder has it.
func (s *Service) ClaimLease(ctx context.Context, name, holder string, ttl time.Duration) (Lease, error) {
	if name == "" || holder == "" || ttl <= 0 {
		return Lease{}, Errorf(CodeInvalid, "a lease needs a name, a holder and a positive duration")
	}
	now := s.Now()
	var l Lease
	err := s.store.Update(ctx, func(tx Tx) (err error) {
		l, err = tx.ClaimLease(ctx, name, holder, now, now.Add(ttl))
		return err
	})
	return l, err
}

// ReleaseLease gives holder's lease up at once, so that another replica
// need not wait for it to expire; a lease holder no longer holds is left
// alone.
func (s *Service) ReleaseLease(ctx context.Context, name, holder string) error {
	now := s.Now()
	return s.store.Update(ctx, func(tx Tx) error { return tx.ReleaseLease(ctx, name, holder, now) })
}
