package dashboard

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/store"
)

// fakeInsights answers Throughput from a fixed set of buckets and records each since.
type fakeInsights struct {
	buckets []store.ThroughputBucket
	sinces  []time.Time
}

func (f *fakeInsights) Throughput(_ context.Context, since time.Time, bucket time.Duration) ([]store.ThroughputBucket, error) {
	f.sinces = append(f.sinces, since)
	var out []store.ThroughputBucket
	for _, b := range f.buckets {
		if !b.Start.Before(since) {
			out = append(out, b)
		}
	}
	return out, nil
}

func (f *fakeInsights) StuckTasks(context.Context, int) ([]*store.Task, error) { return nil, nil }

func TestThroughputCacheAsksOnlyForNewMinutes(t *testing.T) {
	at := func(hm string, sec int) time.Time {
		tm, _ := time.Parse("15:04", hm)
		return time.Date(2030, 1, 2, tm.Hour(), tm.Minute(), sec, 0, time.UTC)
	}
	f := &fakeInsights{buckets: []store.ThroughputBucket{
		{Start: at("11:40", 0), Succeeded: 5},
		{Start: at("12:30", 0), Failed: 1},
	}}
	c := newThroughputCache(f)
	ctx := context.Background()
	check := func(now time.Time, wantSince time.Time) []store.ThroughputBucket {
		t.Helper()
		got, err := c.lastHour(ctx, now)
		if err != nil {
			t.Fatal(err)
		}
		if last := f.sinces[len(f.sinces)-1]; !last.Equal(wantSince) {
			t.Fatalf("at %s: asked since %s, want %s", now.Format("15:04:05"), last.Format("15:04:05"), wantSince.Format("15:04:05"))
		}
		if len(got) != chartBuckets || !got[len(got)-1].Start.Equal(now.Truncate(time.Minute)) {
			t.Fatalf("at %s: %d buckets ending %s", now.Format("15:04:05"), len(got), got[len(got)-1].Start)
		}
		return got
	}

	got := check(at("12:30", 30), at("11:31", 0)) // cold: the whole hour
	if got[9].Start != at("11:40", 0) || got[9].Succeeded != 5 || got[59].Failed != 1 {
		t.Fatalf("buckets %+v / %+v", got[9], got[59])
	}
	f.buckets[1].Failed = 2                      // the current minute moves on
	f.buckets[0].Succeeded = 99                  // a kept minute: not asked again
	got = check(at("12:30", 45), at("12:30", 0)) // warm: the current minute only
	if got[9].Succeeded != 5 || got[59].Failed != 2 {
		t.Fatalf("warm buckets %+v / %+v", got[9], got[59])
	}
	check(at("12:31", 5), at("12:30", 0))  // 12:30 ended less than settleDelay ago: asked again
	check(at("12:31", 15), at("12:30", 0)) // now it settles
	got = check(at("12:31", 20), at("12:31", 0))
	if got[58].Failed != 2 {
		t.Fatalf("kept 12:30 bucket %+v", got[58])
	}
	// The kept minutes are recounted every fullRefresh.
	got = check(at("12:41", 20), at("11:42", 0))
	if got[48].Start != at("12:30", 0) || got[48].Failed != 2 || got[0].Start != at("11:42", 0) {
		t.Fatalf("after refresh %+v, first %+v", got[48], got[0])
	}
}

func TestSharedStatsReusesOnlyForLiveFetches(t *testing.T) {
	st := memoryStore(t)
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	s := newSharedStats(st, func() time.Time { return now }, nil)
	ctx := context.Background()
	if got, _ := s.get(ctx, true); len(got) != 0 {
		t.Fatalf("stats of an empty store: %v", got)
	}
	createTask(t, st, store.CreateParams{})
	if got, _ := s.get(ctx, true); len(got) != 0 {
		t.Fatal("a live fetch within statsReuse did not reuse the last result")
	}
	if got, _ := s.get(ctx, false); len(got) != 1 {
		t.Fatal("a full page load reused an old result")
	}
	now = now.Add(statsReuse)
	if got, _ := s.get(ctx, true); len(got) != 1 {
		t.Fatal("a result older than statsReuse was reused")
	}
}

// slowStats is a store whose Stats query takes took on the test's clock.
type slowStats struct {
	store.Store
	now  *time.Time
	took time.Duration
}

func (s *slowStats) Stats(ctx context.Context) ([]store.QueueStats, error) {
	*s.now = s.now.Add(s.took)
	return s.Store.Stats(ctx)
}

// TestSharedStatsReusesASlowResultLonger: a query that took 2 s answers live fetches for
// 5 times as long, so pages polling every second cannot keep the database busy.
func TestSharedStatsReusesASlowResultLonger(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	st := &slowStats{Store: memoryStore(t), now: &now, took: 2 * time.Second}
	s := newSharedStats(st, func() time.Time { return now }, nil)
	ctx := context.Background()
	s.get(ctx, true)
	createTask(t, st, store.CreateParams{})
	now = now.Add(9 * time.Second)
	if got, _ := s.get(ctx, true); len(got) != 0 {
		t.Fatal("a live fetch 9 s after a 2 s query did not reuse its result")
	}
	now = now.Add(time.Second)
	if got, _ := s.get(ctx, true); len(got) != 1 {
		t.Fatal("a result 10 s old, of a 2 s query, was reused")
	}
}

func TestChart(t *testing.T) {
	for v, want := range map[int64]int64{0: 2, 1: 2, 2: 2, 3: 10, 7: 10, 10: 10, 11: 20, 45: 50, 120: 200, 999: 1000} {
		if got := niceCeiling(v); got != want {
			t.Errorf("niceCeiling(%d) = %d, want %d", v, got, want)
		}
	}
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	buckets := make([]store.ThroughputBucket, chartBuckets)
	for i := range buckets {
		buckets[i].Start = now.Truncate(time.Minute).Add(time.Duration(i-chartBuckets+1) * time.Minute)
	}
	buckets[59] = store.ThroughputBucket{Start: buckets[59].Start, Succeeded: 30, Failed: 10}
	c := newChart(buckets, now)
	if c.Empty || len(c.Bars) != chartBuckets {
		t.Fatalf("chart empty %v with %d bars", c.Empty, len(c.Bars))
	}
	last := c.Bars[59]
	if !last.HasOK || !last.HasFail || c.GridLines[2].Label != "50" || last.Title != "03:04 UTC: 30 succeeded, 10 failed" {
		t.Fatalf("last bar %+v, top grid %+v", last, c.GridLines[2])
	}
	// 40 of 50 on a 188-unit plot: the stack reaches 150.4 units above the baseline.
	if last.FailY != coord(c.Baseline-150.4) || last.OKH != coord(112.8) {
		t.Fatalf("bar geometry %+v (baseline %.1f)", last, c.Baseline)
	}
	if labels := []string{c.XLabels[0].Label, c.XLabels[4].Label}; !slices.Equal(labels, []string{"−60m", "now"}) {
		t.Fatalf("x labels %v", labels)
	}
	if !newChart(make([]store.ThroughputBucket, chartBuckets), now).Empty {
		t.Fatal("a chart with no completions is not Empty")
	}
}

func TestFormatting(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 59 * time.Second: "59s", 60 * time.Second: "1m", 200 * time.Second: "3m 20s",
		2*time.Hour + 5*time.Minute: "2h 5m", 76 * time.Hour: "3d 4h",
	} {
		if got := shortDuration(d); got != want {
			t.Errorf("shortDuration(%s) = %q, want %q", d, got, want)
		}
	}
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	past := now.Add(-90 * time.Second)
	if v := at(now, &past); v.Rel != "1m 30s ago" || v.UTC != "2030-01-02T03:02:35Z" {
		t.Fatalf("at(past) = %+v", v)
	}
	if v := at(now, now.Add(time.Hour)); v.Rel != "in 1h" {
		t.Fatalf("at(future) = %+v", v)
	}
	var none *time.Time
	if at(now, none).Set || at(now, time.Time{}).Set {
		t.Fatal("nil and zero times are set")
	}
	for s, f := range map[string][2]int64{"—": {0, 0}, "0.0%": {5, 0}, "2.5%": {39, 1}, "100.0%": {0, 3}} {
		if got := failureRate(f[0], f[1]); got != s {
			t.Errorf("failureRate(%d, %d) = %q, want %q", f[0], f[1], got, s)
		}
	}
	if got := truncate("héllo", 2); got != "h…" {
		t.Fatalf("truncate cut a character: %q", got)
	}
	if got := formatCount(1234567); got != "1,234,567" {
		t.Fatalf("formatCount = %q", got)
	}
}

func TestParseNextRun(t *testing.T) {
	for _, c := range []struct {
		in, zone string
		want     time.Time
	}{
		{"2031-07-01T09:30", "Europe/Berlin", time.Date(2031, 7, 1, 7, 30, 0, 0, time.UTC)},
		{"2031-01-01 09:30:15", "Europe/Berlin", time.Date(2031, 1, 1, 8, 30, 15, 0, time.UTC)},
		{" 2031-01-01T09:30:00+05:00 ", "Europe/Berlin", time.Date(2031, 1, 1, 4, 30, 0, 0, time.UTC)},
		{"2031-01-01T09:30", "UTC", time.Date(2031, 1, 1, 9, 30, 0, 0, time.UTC)},
	} {
		got, err := parseNextRun(c.in, c.zone)
		if err != nil || !got.Equal(c.want) {
			t.Errorf("parseNextRun(%q, %s) = %s, %v; want %s", c.in, c.zone, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "soon", "2031-13-01T00:00", "01/02/2031"} {
		if _, err := parseNextRun(bad, "UTC"); err == nil {
			t.Errorf("parseNextRun(%q) accepted", bad)
		}
	}
}

func TestLocalPath(t *testing.T) {
	for in, want := range map[string]string{
		"/tasks?status=DEAD": "/tasks?status=DEAD", "/": "/", "": "/", "tasks": "/",
		"//evil.example": "/", `/\evil.example`: "/", "https://evil.example/": "/",
		"/a\r\nSet-Cookie: x": "/",
	} {
		if got := localPath(in); got != want {
			t.Errorf("localPath(%q) = %q, want %q", in, got, want)
		}
	}
	if got := safeNext("/login?next=/x"); got != "/" {
		t.Errorf("safeNext of the login page = %q", got)
	}
}

func TestConfigValidation(t *testing.T) {
	for name, cfg := range map[string]Config{
		"no store":      {},
		"short session": {Store: memoryStore(t), SessionTTL: time.Second},
		"fast poll":     {Store: memoryStore(t), PollInterval: time.Millisecond},
	} {
		if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "invalid config") {
			t.Errorf("%s: New = %v, want an invalid config error", name, err)
		}
	}
}

// blockingStats counts Stats calls and holds each until released.
type blockingStats struct {
	store.Store
	calls   atomic.Int64
	entered chan struct{}
	release chan struct{}
}

func (b *blockingStats) Stats(ctx context.Context) ([]store.QueueStats, error) {
	b.calls.Add(1)
	b.entered <- struct{}{}
	<-b.release
	return b.Store.Stats(ctx)
}

func TestSharedStatsOneQueryForConcurrentFetches(t *testing.T) {
	st := &blockingStats{Store: memoryStore(t), entered: make(chan struct{}, 10), release: make(chan struct{})}
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	s := newSharedStats(st, func() time.Time { return now }, nil)
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() {
			if _, err := s.get(context.Background(), true); err != nil {
				t.Error(err)
			}
		})
	}
	<-st.entered // one query runs; the others wait for it or reuse its result
	close(st.release)
	wg.Wait()
	if n := st.calls.Load(); n != 1 {
		t.Fatalf("%d Stats queries for 5 concurrent live fetches, want 1", n)
	}
}

// TestTokenIsTrimmed: a token read from a secret file keeps its newline; the login form's
// token is compared trimmed, so the configured one is trimmed too, or nobody could log in.
// One that still holds whitespace or a control character is refused.
func TestTokenIsTrimmed(t *testing.T) {
	d := newDashboard(t, Config{Store: memoryStore(t), Token: testToken + "\n"})
	login(t, newBrowser(t, d), "/")
	for _, bad := range []string{"s3 cret", "s3\x00cret", "\n"} {
		if _, err := New(Config{Store: memoryStore(t), Token: bad}); err == nil {
			t.Errorf("New accepted the token %q", bad)
		}
	}
}
