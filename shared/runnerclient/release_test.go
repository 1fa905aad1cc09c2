package runnerclient

import (
	"context"
	"testing"
	"time"

	"github.com/noetl/gcpengine/runner/server"
	"github.com/noetl/gcpengine/shared/runnerproto"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/types"
)

// What the runner's Setup made for an attempt (its workspace: a tmpfs to
// unmount) is released after the answer, not before it: the answer
// arrives while the release is still blocked, the release does happen,
// and Handler.Wait returns only once it has.
func TestSetupReleasedAfterTheAnswer(t *testing.T) {
	c, srv := served(t, tools.Registry{"python": echo}, nil)
	h := srv.Config.Handler.(*server.Handler)
	unblock, released := make(chan struct{}), make(chan struct{})
	h.Setup = func(ctx context.Context, _ runnerproto.Request) (context.Context, func(), error) {
		return ctx, func() {
			<-unblock
			close(released)
		}, nil
	}
	got := make(chan types.Outcome, 1)
	go func() {
		got <- c.Run(context.Background(), "python", tools.Request{ExecutionID: "e1", Step: "s", Task: "t", Attempt: 1})
	}()
	select {
	case o := <-got:
		if o.Status != types.StatusOK {
			t.Fatalf("outcome %+v", o)
		}
	case <-time.After(10 * time.Second):
		close(unblock)
		t.Fatal("no answer while the attempt's release was blocked: the answer waits for it")
	}
	select {
	case <-released:
		t.Fatal("released before it was unblocked")
	default:
	}
	waited := make(chan struct{})
	go func() {
		h.Wait()
		close(waited)
	}()
	select {
	case <-waited:
		t.Fatal("Wait returned before the release")
	case <-time.After(50 * time.Millisecond):
	}
	close(unblock)
	<-released
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return after the release")
	}
}
