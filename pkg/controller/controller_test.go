package controller

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// The controller comes back for the earliest certificate renewal of the
// Clusters it applied, and only then: at rest it sends nothing.
func TestUntilRenewal(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	for _, tc := range []struct {
		name     string
		renewals []time.Time
		want     time.Duration
	}{
		{"no certificates: no requeue", []time.Time{{}, {}}, 0},
		{"the earliest of the Clusters", []time.Time{now.Add(240 * day), {}, now.Add(100 * day)}, 100 * day},
		{"overdue: soon, not at once", []time.Time{now.Add(-time.Hour)}, time.Minute},
	} {
		if got := untilRenewal(tc.renewals, now); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// A long message (every failing check with its details) is cut to a size
// the API server accepts, at a character boundary.
func TestTruncate(t *testing.T) {
	if got := truncate("short"); got != "short" {
		t.Errorf("short message changed: %q", got)
	}
	long := strings.Repeat("é", 40000)
	got := truncate(long)
	if len(got) > maxMessage || !utf8.ValidString(got) || !strings.HasSuffix(got, "(truncated)") {
		t.Errorf("truncated to %d bytes, valid UTF-8 %t, suffix %q", len(got), utf8.ValidString(got), got[len(got)-12:])
	}
}
