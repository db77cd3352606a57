package webhook

import (
	"slices"
	"testing"

	"github.com/google/uuid"
)

func TestAbsoluteURLs(t *testing.T) {
	got := absoluteURLs("https://app.example.com", []string{"/data/a.wacz", "oid/b.wacz", "https://s3.example.com/c.wacz?X-Amz=1"})
	want := []string{"https://app.example.com/data/a.wacz", "https://app.example.com/oid/b.wacz", "https://s3.example.com/c.wacz?X-Amz=1"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// TestOnceID: the id of a once-per-item event is a stable version-4 UUID
// that differs between events and items.
func TestOnceID(t *testing.T) {
	a, b := onceID("crawlStarted", "c1"), onceID("crawlStarted", "c1")
	if a != b || a.Version() != 4 || a.Variant() != uuid.RFC4122 {
		t.Fatalf("%v %v", a, b)
	}
	if onceID("crawlFinished", "c1") == a || onceID("crawlStarted", "c2") == a {
		t.Fatal("ids collide")
	}
}
