package egress

import (
	"errors"
	"testing"
)

// TestAdoptBindsAWarmCounter: a counter made without a task (a warm
// sandbox's) admits connections up to the task's bound and its
// execution's once it adopts the task's counter; one that already holds
// a connection refuses to adopt.
func TestAdoptBindsAWarmCounter(t *testing.T) {
	c := &Conns{ExecutionMax: 2}
	other := c.Task("e1", 0)
	if _, err := other.Acquire(); err != nil {
		t.Fatal(err)
	}
	warm := &TaskConns{}
	if err := warm.Adopt(c.Task("e1", 5)); err != nil {
		t.Fatal(err)
	}
	if _, err := warm.Acquire(); err != nil {
		t.Fatalf("first connection: %v", err)
	}
	_, err := warm.Acquire()
	var q *QuotaError
	if !errors.As(err, &q) || q.Scope != "execution" {
		t.Fatalf("third connection of the execution: %v, want the execution quota", err)
	}
	busy := &TaskConns{}
	if _, err := busy.Acquire(); err != nil {
		t.Fatal(err)
	}
	if err := busy.Adopt(c.Task("e2", 1)); err == nil {
		t.Fatal("a counter holding a connection adopted a task")
	}
}
