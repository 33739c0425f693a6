package sqsmode

import (
	"errors"
	"testing"
)

// TestLossJudge: what one check of a queue concludes, given the checks before it.
func TestLossJudge(t *testing.T) {
	type check struct {
		st      queueState
		sent    int
		counted bool
		want    string
	}
	ok := func(created string, messages int) queueState { return queueState{created: created, messages: messages} }
	for _, c := range []struct {
		name   string
		checks []check
	}{
		{"first sight is no news", []check{{ok("100", 0), 0, true, ""}}},
		{"re-created", []check{{ok("100", 5), 5, true, ""}, {ok("107", 5), 5, true, LossRecreated}, {ok("107", 5), 5, true, ""}}},
		{"one low count is not enough", []check{{ok("1", 0), 10, true, ""}, {ok("1", 10), 10, true, ""}, {ok("1", 0), 10, true, ""}}},
		{"two low counts running", []check{{ok("1", 4), 10, true, ""}, {ok("1", 4), 10, true, LossCounts},
			// healing: the suspicion starts afresh
			{ok("1", 0), 10, true, ""}, {ok("1", 0), 10, true, LossCounts}}},
		{"half is not far below", []check{{ok("1", 5), 10, true, ""}, {ok("1", 5), 10, true, ""}}},
		{"one sent task without its message", []check{{ok("1", 0), 1, true, ""}, {ok("1", 0), 1, true, LossCounts}}},
		{"no count: only re-creation is judged", []check{{ok("1", 0), 10, false, ""}, {ok("1", 0), 10, false, ""}, {ok("2", 0), 10, false, LossRecreated}}},
		{"SQS unreachable changes nothing", []check{{ok("1", 0), 10, true, ""}, {queueState{err: errors.New("down")}, 10, true, ""}, {ok("1", 0), 10, true, LossCounts}}},
		{"missing, then back", []check{{ok("1", 3), 3, true, ""}, {queueState{missing: true, err: errors.New("gone")}, 3, true, LossMissing},
			{ok("9", 0), 0, true, ""}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := &lossWatch{created: map[string]string{}, suspect: map[string]bool{}}
			for i, ch := range c.checks {
				if got := w.judge("q", ch.st, map[string]int{"q": ch.sent}, ch.counted); got != ch.want {
					t.Fatalf("check %d: got %q, want %q", i+1, got, ch.want)
				}
			}
		})
	}
}
