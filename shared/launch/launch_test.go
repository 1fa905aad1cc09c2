package launch

import (
	"context"
	"errors"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/store/memstore"
	"github.com/noetl/gcpengine/shared/types"
)

func TestNewIDIsASnowflake(t *testing.T) {
	before := time.Now().UnixMilli() - IDEpoch
	seen := map[string]bool{}
	prevMS := int64(0)
	for range 100000 {
		id := NewID()
		n, err := strconv.ParseInt(id, 10, 64)
		if err != nil || n <= 0 {
			t.Fatalf("id %q is not a positive int64: %v", id, err)
		}
		if seen[id] {
			t.Fatalf("id %q drawn twice", id)
		}
		seen[id] = true
		ms := n >> 22
		if ms < before || ms > time.Now().UnixMilli()-IDEpoch {
			t.Fatalf("id %q carries %d ms, not between %d and now", id, ms, before)
		}
		if ms < prevMS {
			t.Fatalf("id %q is older than the id before it", id)
		}
		prevMS = ms
	}
	if n := len(NewID()); n < 18 || n > 19 {
		t.Errorf("ids have %d digits, want 18 or 19 (NoETL's size)", n)
	}
}

func TestDerivedID(t *testing.T) {
	a, b := DerivedID("child", "1", "step"), DerivedID("child", "1", "step")
	if a != b {
		t.Fatalf("DerivedID is not deterministic: %s, %s", a, b)
	}
	if a == DerivedID("child", "1", "other") || a == DerivedID("child", "1step") {
		t.Fatal("different parts derive the same id")
	}
	if n, err := strconv.ParseUint(a, 10, 64); err != nil || n > math.MaxInt64 {
		t.Fatalf("derived id %q is not a BIGINT: %v", a, err)
	}
}

type pub struct{ batches []types.Batch }

func (p *pub) PublishBatch(_ context.Context, b types.Batch) error {
	p.batches = append(p.batches, b)
	return nil
}

// PublishCommands implements bus.Publisher: launching publishes no
// command.
func (p *pub) PublishCommands(context.Context, ...types.Command) error {
	return errors.New("pub: unexpected commands")
}

func TestStartIsIdempotentForAnExplicitID(t *testing.T) {
	pb, err := dsl.Load([]byte("apiVersion: noetl.io/v2\nkind: Playbook\nmetadata:\n  name: t\n  path: t\nworkflow:\n  - step: start\n    tool:\n      kind: noop\n"), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	st, p := memstore.NewMemory(), &pub{}
	ctx := context.Background()
	id, err := Start(ctx, st, p, Params{Playbook: pb})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := strconv.ParseInt(id, 10, 64); err != nil {
		t.Fatalf("new execution id %q is not numeric", id)
	}
	again, err := Start(ctx, st, p, Params{Playbook: pb, ExecutionID: id})
	if err != nil || again != id {
		t.Fatalf("restart of %s: %s, %v", id, again, err)
	}
	if len(p.batches) != 2 || p.batches[0].ID != p.batches[1].ID {
		t.Fatalf("the request batch was not republished under the same id: %+v", p.batches)
	}
	if _, err := st.ExecutionGet(ctx, id); err != nil {
		t.Fatal(err)
	}
}
