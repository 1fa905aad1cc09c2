package engine

import (
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/dsl"
)

func TestBackoff(t *testing.T) {
	cases := []struct {
		then    dsl.Then
		attempt int
		want    float64
	}{
		{dsl.Then{Delay: 2}, 3, 2},
		{dsl.Then{Delay: 2, Backoff: "none"}, 3, 2},
		{dsl.Then{Delay: 1, Backoff: "linear"}, 3, 3},
		{dsl.Then{Delay: 0.5, Backoff: "exponential"}, 1, 0.5},
		{dsl.Then{Delay: 0.5, Backoff: "exponential"}, 2, 1},
		{dsl.Then{Delay: 0.5, Backoff: "exponential"}, 4, 4},
		{dsl.Then{Delay: 1, Backoff: "exponential", MaxDelay: 5}, 10, 5},
	}
	for _, c := range cases {
		if got := Backoff(c.then, c.attempt); got != time.Duration(c.want*float64(time.Second)) {
			t.Errorf("backoff(%+v, %d) = %v, want %v", c.then, c.attempt, got, c.want)
		}
	}
}
