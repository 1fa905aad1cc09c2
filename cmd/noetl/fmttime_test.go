package main

import (
	"testing"
	"time"
)

// TestFmtTime: a timestamp prints to the second in UTC; the zero time (not
// there yet) prints empty, never as 0001-01-01.
func TestFmtTime(t *testing.T) {
	at := time.Date(2026, 1, 2, 4, 4, 5, 6e8, time.FixedZone("x", 3600))
	if got := fmtTime(at); got != "2026-01-02 03:04:05Z" {
		t.Errorf("fmtTime = %q", got)
	}
	if got := fmtTime(time.Time{}); got != "" {
		t.Errorf("fmtTime(zero) = %q, want empty", got)
	}
	if got := fmtTimeText("2026-01-02T03:04:05.6Z"); got != "2026-01-02 03:04:05Z" {
		t.Errorf("fmtTimeText = %q", got)
	}
	if got := fmtTimeText("soon"); got != "soon" {
		t.Errorf("fmtTimeText(unparsable) = %q", got)
	}
}
