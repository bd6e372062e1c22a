package daemon

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func openTestQueue(t *testing.T, path string) *Queue {
	t.Helper()
	q, err := OpenQueue(path, NewBus(), &MemoryRules{})
	must(t, err)
	t.Cleanup(q.Close)
	return q
}

func TestWaitRange(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		d  time.Duration
		ok bool
	}{
		"off":         {0, false},
		"negative":    {-time.Minute, false},
		"30 seconds":  {30 * time.Second, false},
		"1 minute":    {time.Minute, true},
		"15 minutes":  {15 * time.Minute, true},
		"8 hours":     {8 * time.Hour, true},
		"8 hours 1 s": {8*time.Hour + time.Second, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			q := openTestQueue(t, filepath.Join(t.TempDir(), "q.json"))
			err := q.SetWait("abcd1234", tc.d)
			if (err == nil) != tc.ok {
				t.Fatalf("SetWait(%s) = %v, want ok=%v", tc.d, err, tc.ok)
			}
			if !tc.ok && !errors.Is(err, ErrWaitRange) {
				t.Fatalf("error %v is not ErrWaitRange", err)
			}
		})
	}
	q := openTestQueue(t, filepath.Join(t.TempDir(), "q.json"))
	if q.WaitFor("any") != DefaultWait {
		t.Fatalf("default wait %s, want 15m", q.WaitFor("any"))
	}
}

func TestUnansweredQuestionIsRefused(t *testing.T) {
	t.Parallel()
	q := openTestQueue(t, filepath.Join(t.TempDir(), "q.json"))
	q.testWait = 100 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got, err := q.Ask(ctx, Question{Task: "abcd1234", Kind: "connection", Title: "Connect?", Subject: "h:443"})
	must(t, err)
	if got.State != Expired || got.Approved() || got.By != "timeout" {
		t.Fatalf("unanswered question = %+v, want refused by timeout", got)
	}
	if _, err := q.Answer(got.ID, Decision{Approve: true}); !errors.Is(err, ErrAnswered) {
		t.Fatalf("answering a refused question: %v, want ErrAnswered", err)
	}
}

func TestAnswers(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		d          Decision
		state      string
		remembered bool
	}{
		"approve":               {Decision{Approve: true}, Approved, false},
		"deny":                  {Decision{}, Denied, false},
		"approve and remember":  {Decision{Approve: true, Remember: true}, Approved, true},
		"deny ignores remember": {Decision{Remember: true}, Denied, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			q := openTestQueue(t, filepath.Join(t.TempDir(), "q.json"))
			in := Question{Task: "abcd1234", Kind: "connection", Title: "Connect?", Subject: "example.org:443"}
			done := make(chan Question, 1)
			go func() { a, _ := q.Ask(context.Background(), in); done <- a }()
			var id string
			for deadline := time.Now().Add(30 * time.Second); id == ""; {
				if time.Now().After(deadline) {
					t.Fatal("waited 30 s for the question to be listed")
				}
				for _, x := range q.List() {
					id = x.ID
				}
				time.Sleep(5 * time.Millisecond)
			}
			_, err := q.Answer(id, tc.d)
			must(t, err)
			got := <-done
			if got.State != tc.state {
				t.Fatalf("asker got %s, want %s", got.State, tc.state)
			}
			next, err := q.Post(in)
			must(t, err)
			if remembered := next.State == Approved && next.By == "rule"; remembered != tc.remembered {
				t.Fatalf("the next same question: %+v, want remembered=%v", next, tc.remembered)
			}
		})
	}
}

func TestQuestionsSurviveRestart(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "q.json")
	q := openTestQueue(t, path)
	must(t, q.SetWait("", 2*time.Hour))
	a, err := q.Post(Question{Task: "abcd1234", Kind: "permission", Title: "Run rm?", Subject: "terminal"})
	must(t, err)
	b, err := q.Post(Question{Task: "abcd1234", Kind: "connection", Title: "Connect?"})
	must(t, err)
	_, err = q.Answer(b.ID, Decision{})
	must(t, err)
	q.Close()

	q2 := openTestQueue(t, path)
	if q2.WaitFor("x") != 2*time.Hour {
		t.Fatalf("wait after restart %s, want 2h", q2.WaitFor("x"))
	}
	got := map[string]Question{}
	for _, x := range q2.List() {
		got[x.ID] = x
	}
	if got[a.ID].State != Waiting || !got[a.ID].Deadline.Equal(a.Deadline) || got[b.ID].State != Denied {
		t.Fatalf("after restart: %+v", got)
	}
	if q2.Pending() != 1 {
		t.Fatalf("pending %d, want 1", q2.Pending())
	}
}

func TestQuestionPastDeadlineAtStartIsRefused(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "q.json")
	past := time.Now().Add(-time.Hour).UTC()
	must(t, os.WriteFile(path, []byte(`{"questions":[{"id":"q1","task":"abcd1234","kind":"connection","title":"Connect?","asked":"`+past.Format(time.RFC3339Nano)+`","deadline":"`+past.Format(time.RFC3339Nano)+`","state":"waiting"}]}`), 0o600))
	q := openTestQueue(t, path)
	got, err := q.Wait(context.Background(), "q1")
	must(t, err)
	if got.State != Expired {
		t.Fatalf("a question whose wait ran out while the daemon was down: %s, want expired", got.State)
	}
}

func TestDamagedQuestionsFile(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"not json":     `{`,
		"bad state":    `{"questions":[{"id":"a","state":"maybe"}]}`,
		"twice":        `{"questions":[{"id":"a","state":"waiting"},{"id":"a","state":"waiting"}]}`,
		"no id":        `{"questions":[{"state":"waiting"}]}`,
		"wait off":     `{"questions":[],"wait":"0s"}`,
		"task wait 9h": `{"questions":[],"task_waits":{"abcd1234":"9h"}}`,
	}
	for name, body := range tests {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "q.json")
			must(t, os.WriteFile(path, []byte(body), 0o600))
			if _, err := OpenQueue(path, nil, nil); !errors.Is(err, ErrDamagedState) {
				t.Fatalf("got %v, want ErrDamagedState", err)
			}
		})
	}
}

func FuzzQueueFile(f *testing.F) {
	f.Add([]byte(`{"questions":[{"id":"a","task":"t","kind":"k","title":"x","state":"waiting"}],"wait":"20m"}`))
	f.Add([]byte(`{"questions":[]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		qf, err := decodeQueueFile(b)
		if err != nil {
			return
		}
		for _, q := range qf.Questions {
			if q.ID == "" {
				t.Fatal("accepted a question without an id")
			}
		}
	})
}
