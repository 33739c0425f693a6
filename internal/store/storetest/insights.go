package storetest

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/store"
)

var insightsTests = []testCase{
	{"ThroughputCountsFinished", testThroughputCounts},
	{"ThroughputBucketBoundaries", testThroughputBuckets},
	{"ThroughputInvalid", testThroughputInvalid},
	{"StuckTasksExpiredOnly", testStuckTasks},
	{"StuckTasksInvalid", testStuckTasksInvalid},
	{"RunningByGroup", testRunningByGroup},
}

// RunningByGroup counts only PROCESSING tasks with a group key, of the queues asked
// for, most running first.
func testRunningByGroup(t *testing.T, s store.Store) {
	running := func(queue, group string, n int) {
		for range n {
			createAndClaim(t, s, store.CreateParams{Kind: "k", Queue: queue, GroupKey: group})
		}
	}
	running("a", "g1", 1)
	running("a", "g2", 3)
	running("a", "", 2) // no group: not counted
	running("b", "g1", 2)
	running("c", "g1", 1) // not asked for
	createOne(t, s, store.CreateParams{Kind: "k", Queue: "a", GroupKey: "waiting"})
	done := createAndClaim(t, s, store.CreateParams{Kind: "k", Queue: "a", GroupKey: "done"})
	record(t, s, store.Outcome{TaskID: done.ID, LeaseToken: done.LeaseToken, Kind: store.Succeed})

	got, err := s.RunningByGroup(ctx(t), []string{"a", "b", "empty"})
	if err != nil {
		t.Fatalf("RunningByGroup: %v", err)
	}
	want := []store.GroupRunning{{Queue: "a", GroupKey: "g2", Running: 3}, {Queue: "a", GroupKey: "g1", Running: 1}, {Queue: "b", GroupKey: "g1", Running: 2}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("RunningByGroup = %+v, want %+v", got, want)
	}
	if got, err := s.RunningByGroup(ctx(t), nil); err != nil || len(got) != 0 || got == nil {
		t.Fatalf("RunningByGroup(nil) = %#v, %v; want an empty list", got, err)
	}
	if _, err := s.RunningByGroup(ctx(t), []string{"bad queue"}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("RunningByGroup(bad name) = %v, want ErrInvalid", err)
	}
}

func throughput(t *testing.T, s store.Store, since time.Time, bucket time.Duration) []store.ThroughputBucket {
	t.Helper()
	got, err := s.Throughput(ctx(t), since, bucket)
	if err != nil {
		t.Fatalf("Throughput(%s, %s): %v", since.Format(time.RFC3339Nano), bucket, err)
	}
	return got
}

func testThroughputCounts(t *testing.T, s store.Store) {
	for range 3 {
		driveTo(t, s, store.CreateParams{Kind: "k"}, store.StatusSucceeded)
	}
	driveTo(t, s, store.CreateParams{Kind: "k", Queue: "other"}, store.StatusFailed)
	driveTo(t, s, store.CreateParams{Kind: "k"}, store.StatusDead)
	driveTo(t, s, store.CreateParams{Kind: "k"}, store.StatusDead)
	driveTo(t, s, store.CreateParams{Kind: "k"}, store.StatusCanceled)
	replayed := driveTo(t, s, store.CreateParams{Kind: "k"}, store.StatusDead)
	if _, err := s.ReplayTask(ctx(t), replayed.ID); err != nil {
		t.Fatalf("ReplayTask: %v", err)
	}
	createOne(t, s, store.CreateParams{Kind: "k"})
	createAndClaim(t, s, store.CreateParams{Kind: "k"})

	// One hour-long bucket starting half an hour ago holds every completion.
	since := time.Now().Add(-30*time.Minute + 123456789*time.Nanosecond)
	got := throughput(t, s, since, time.Hour)
	if len(got) != 1 {
		t.Fatalf("Throughput: %d buckets, want 1: %+v", len(got), got)
	}
	if want := since.Truncate(time.Microsecond); !got[0].Start.Equal(want) {
		t.Fatalf("bucket starts at %s, want since at microsecond precision %s",
			got[0].Start.Format(time.RFC3339Nano), want.Format(time.RFC3339Nano))
	}
	if got[0].Start.Location() != time.UTC {
		t.Fatalf("bucket start %s is not in UTC", got[0].Start)
	}
	if got[0].Succeeded != 3 || got[0].Failed != 3 {
		t.Fatalf("bucket counts succeeded %d failed %d, want 3 and 3 (DEAD and FAILED; CANCELED, replayed, live tasks not counted)",
			got[0].Succeeded, got[0].Failed)
	}

	// Completions before since are left out.
	if got := throughput(t, s, time.Now().Add(10*time.Minute), time.Minute); len(got) != 0 {
		t.Fatalf("Throughput since a future time: %+v, want no buckets", got)
	}
}

func testThroughputBuckets(t *testing.T, s store.Store) {
	driveTo(t, s, store.CreateParams{Kind: "k"}, store.StatusSucceeded)
	driveTo(t, s, store.CreateParams{Kind: "k"}, store.StatusFailed)
	// Completions happened about now, 90 minutes after since: in the second hour bucket.
	since := time.Now().Add(-90 * time.Minute).Truncate(time.Second)
	got := throughput(t, s, since, time.Hour)
	if len(got) != 1 {
		t.Fatalf("Throughput: %d buckets, want 1: %+v", len(got), got)
	}
	if want := since.Add(time.Hour); !got[0].Start.Equal(want) {
		t.Fatalf("bucket starts at %s, want %s (since + 1 bucket)", got[0].Start.Format(time.RFC3339), want.Format(time.RFC3339))
	}
	if got[0].Succeeded != 1 || got[0].Failed != 1 {
		t.Fatalf("bucket counts %+v, want 1 succeeded and 1 failed", got[0])
	}
}

func testThroughputInvalid(t *testing.T, s store.Store) {
	for name, args := range map[string]struct {
		since  time.Time
		bucket time.Duration
	}{
		"zero since":     {time.Time{}, time.Minute},
		"zero bucket":    {time.Now(), 0},
		"negative":       {time.Now(), -time.Minute},
		"below a second": {time.Now(), 999 * time.Millisecond},
	} {
		_, err := s.Throughput(ctx(t), args.since, args.bucket)
		wantErr(t, err, store.ErrInvalid, "Throughput with "+name)
	}
}

func testStuckTasks(t *testing.T, s store.Store) {
	first := claimID(t, s, createOne(t, s, store.CreateParams{Kind: "k"}), store.StatusPending, shortLease)
	second := claimID(t, s, createOne(t, s, store.CreateParams{Kind: "k", Queue: "other"}), store.StatusPending, 2*shortLease)
	claimID(t, s, createOne(t, s, store.CreateParams{Kind: "k"}), store.StatusPending, time.Hour)
	createOne(t, s, store.CreateParams{Kind: "k"})
	waitExpiredLeases(t, s, "default", 1)
	waitExpiredLeases(t, s, "other", 1)

	got, err := s.StuckTasks(ctx(t), 10)
	if err != nil {
		t.Fatalf("StuckTasks: %v", err)
	}
	if len(got) != 2 || got[0].ID != first.ID || got[1].ID != second.ID {
		t.Fatalf("StuckTasks = %v, want [%s %s] (expired leases only, longest expired first)", ids(got), first.ID, second.ID)
	}
	sameTask(t, "stuck task", got[0], first)

	got, err = s.StuckTasks(ctx(t), 1)
	if err != nil {
		t.Fatalf("StuckTasks(1): %v", err)
	}
	if len(got) != 1 || got[0].ID != first.ID {
		t.Fatalf("StuckTasks(1) = %v, want [%s]", ids(got), first.ID)
	}
}

func testStuckTasksInvalid(t *testing.T, s store.Store) {
	for _, limit := range []int{0, -1, store.MaxListLimit + 1} {
		_, err := s.StuckTasks(ctx(t), limit)
		wantErr(t, err, store.ErrInvalid, "StuckTasks with a bad limit")
	}
}
