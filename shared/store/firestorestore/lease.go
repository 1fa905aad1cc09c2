package firestorestore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"

	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/store/internal/codec"
	"github.com/noetl/gcpengine/shared/types"
)

type leaseDoc struct {
	Holder   string    `firestore:"holder"`
	Expires  time.Time `firestore:"expires"`
	ExpireAt time.Time `firestore:"expire_at"` // TTL policy: a day after expiry
}

func (f *Firestore) unit(execID, unit string) *firestore.DocumentRef {
	return f.exec(execID).Collection("units").Doc(unit)
}

func newLease(p store.LeaseAcquireParams) leaseDoc {
	exp := p.Now.Add(p.TTL)
	return leaseDoc{Holder: p.Holder, Expires: exp, ExpireAt: exp.Add(24 * time.Hour)}
}

// LeaseAcquire implements store.Store: a Create when the unit has no lease (one
// write), else a compare-and-set that takes over an expired lease.
func (f *Firestore) LeaseAcquire(ctx context.Context, p store.LeaseAcquireParams) error {
	ref := f.unit(p.ExecutionID, p.Unit)
	m := meterOf(ctx, p.ExecutionID)
	m.Write(1)
	_, err := ref.Create(ctx, newLease(p))
	if err == nil {
		return nil
	}
	if !isCode(err, codes.AlreadyExists) {
		return errs.Wrap(errs.CodeOf(err), err, "store: acquire lease")
	}
	return f.cas(ctx, m, ref, "store: acquire lease", func(s *firestore.DocumentSnapshot) (casWrite, error) {
		if s == nil {
			return casWrite{create: newLease(p)}, nil
		}
		var d leaseDoc
		if err := s.DataTo(&d); err != nil {
			return casWrite{}, err
		}
		if d.Holder != p.Holder && d.Expires.After(p.Now) {
			return casWrite{}, store.ErrLeaseHeld
		}
		return casWrite{update: leaseUpdate(newLease(p))}, nil
	})
}

// LeaseRenew implements store.Store (a compare-and-set while the caller holds
// the lease).
func (f *Firestore) LeaseRenew(ctx context.Context, p store.LeaseAcquireParams) error {
	ref := f.unit(p.ExecutionID, p.Unit)
	return f.cas(ctx, meterOf(ctx, p.ExecutionID), ref, "store: renew lease", func(s *firestore.DocumentSnapshot) (casWrite, error) {
		if s == nil {
			return casWrite{}, store.ErrLeaseLost
		}
		var d leaseDoc
		if err := s.DataTo(&d); err != nil {
			return casWrite{}, err
		}
		if d.Holder != p.Holder {
			return casWrite{}, store.ErrLeaseLost
		}
		return casWrite{update: leaseUpdate(newLease(p))}, nil
	})
}

// LeaseRelease implements store.Store: a compare-and-set that deletes the lease
// when the caller still holds it.
func (f *Firestore) LeaseRelease(ctx context.Context, executionID, unit, holder string) error {
	ref := f.unit(executionID, unit)
	return f.cas(ctx, meterOf(ctx, executionID), ref, "store: release lease", func(s *firestore.DocumentSnapshot) (casWrite, error) {
		if s == nil {
			return casWrite{}, nil
		}
		var d leaseDoc
		if err := s.DataTo(&d); err != nil {
			return casWrite{}, err
		}
		if d.Holder != holder {
			return casWrite{}, nil
		}
		return casWrite{del: true}, nil
	})
}

// LeaseGet implements store.Store.
func (f *Firestore) LeaseGet(ctx context.Context, executionID, unit string) (string, time.Time, error) {
	meterOf(ctx, executionID).Read(1)
	s, err := f.unit(executionID, unit).Get(ctx)
	if err != nil {
		if isCode(err, codes.NotFound) {
			return "", time.Time{}, store.ErrNotFound
		}
		return "", time.Time{}, errs.Wrap(errs.CodeOf(err), err, "store: get lease")
	}
	var d leaseDoc
	if err := s.DataTo(&d); err != nil {
		return "", time.Time{}, err
	}
	return d.Holder, d.Expires, nil
}

// leaseUpdate is the Update of every field of a lease document.
func leaseUpdate(d leaseDoc) []firestore.Update {
	return []firestore.Update{{Path: "holder", Value: d.Holder}, {Path: "expires", Value: d.Expires}, {Path: "expire_at", Value: d.ExpireAt}}
}

type attemptDoc struct {
	Data     string    `firestore:"data"`
	ExpireAt time.Time `firestore:"expire_at"`
}

func (f *Firestore) attempt(executionID, unit, key string) *firestore.DocumentRef {
	return f.unit(executionID, unit).Collection("attempts").Doc(key)
}

// AttemptPut implements store.Store (a Create: the first record wins).
func (f *Firestore) AttemptPut(ctx context.Context, executionID, unit, key string, out types.Outcome) error {
	b, err := json.Marshal(out)
	if err != nil {
		return fmt.Errorf("store: encode attempt: %w", err)
	}
	meterOf(ctx, executionID).Write(1)
	_, err = f.attempt(executionID, unit, key).Create(ctx, attemptDoc{Data: string(b), ExpireAt: time.Now().UTC().Add(f.retention())})
	if err != nil && !isCode(err, codes.AlreadyExists) {
		return errs.Wrap(errs.CodeOf(err), err, "store: put attempt")
	}
	return nil
}

// AttemptGet implements store.Store.
func (f *Firestore) AttemptGet(ctx context.Context, executionID, unit, key string) (*types.Outcome, error) {
	meterOf(ctx, executionID).Read(1)
	s, err := f.attempt(executionID, unit, key).Get(ctx)
	if err != nil {
		if isCode(err, codes.NotFound) {
			return nil, store.ErrNotFound
		}
		return nil, errs.Wrap(errs.CodeOf(err), err, "store: get attempt")
	}
	var d attemptDoc
	if err := s.DataTo(&d); err != nil {
		return nil, err
	}
	return codec.Outcome([]byte(d.Data))
}
