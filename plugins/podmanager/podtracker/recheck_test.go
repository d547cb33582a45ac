package podtracker

import (
	"reflect"
	"testing"
	"time"

	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

func testPod(name string) podapi.Pod {
	return podapi.Pod{ID: podapi.PodID{Namespace: "default", Name: name}, UID: "uid-" + name}
}

// TestRecheckBackoff follows one pod through its rechecks on a made-up
// clock: the delays double up to the cap, and the pod is forgotten once it
// has been rechecked for the schedule's lifetime.
func TestRecheckBackoff(t *testing.T) {
	start := time.Unix(1000, 0)
	s := newRecheckSchedule(1600 * time.Millisecond)
	pod := testPod("web")
	s.add(pod, start)

	var delays []time.Duration
	now := start
	for {
		due, waiting := s.next()
		if !waiting {
			break
		}
		delays = append(delays, due.Sub(now))
		now = due
		if got := s.takeDue(now); !reflect.DeepEqual(got, []podapi.Pod{pod}) {
			t.Fatalf("due at %v = %v, want [%v]", now.Sub(start), got, pod)
		}
		if !s.backOff(pod.ID, now) {
			break
		}
	}
	ms := time.Millisecond
	want := []time.Duration{100 * ms, 200 * ms, 400 * ms, 400 * ms, 400 * ms}
	if !reflect.DeepEqual(delays, want) {
		t.Errorf("recheck delays = %v, want %v", delays, want)
	}
	if _, waiting := s.next(); waiting {
		t.Error("pod still waits after the schedule's lifetime")
	}
}

func TestRecheckSchedule(t *testing.T) {
	start := time.Unix(1000, 0)
	ms := time.Millisecond
	tests := []struct {
		name     string
		schedule func(s *recheckSchedule)
		at       time.Duration
		wantDue  []podapi.Pod
		wantNext time.Duration
	}{
		{
			name:     "nothing due before the first delay",
			schedule: func(s *recheckSchedule) { s.add(testPod("a"), start) },
			at:       99 * ms,
			wantNext: 100 * ms,
		},
		{
			name: "every pod due is taken at once, ordered; the next round waits the first delay",
			schedule: func(s *recheckSchedule) {
				s.add(testPod("b"), start)
				s.add(testPod("a"), start.Add(10*ms))
				s.add(testPod("c"), start.Add(time.Second))
			},
			at:       110 * ms,
			wantDue:  []podapi.Pod{testPod("a"), testPod("b")},
			wantNext: 210 * ms,
		},
		{
			name: "a repeated add keeps the backoff",
			schedule: func(s *recheckSchedule) {
				s.add(testPod("a"), start)
				s.backOff(testPod("a").ID, start.Add(100*ms))
				s.add(testPod("a"), start.Add(150*ms))
			},
			at:       250 * ms,
			wantNext: 300 * ms,
		},
		{
			name: "a round is never closer than the first delay to the last",
			schedule: func(s *recheckSchedule) {
				s.add(testPod("a"), start)
				s.takeDue(start.Add(100 * ms))
				s.drop(testPod("a").ID)
				s.add(testPod("b"), start.Add(20*ms))
			},
			at:       110 * ms,
			wantNext: 200 * ms,
		},
		{
			name: "a dropped pod is not rechecked",
			schedule: func(s *recheckSchedule) {
				s.add(testPod("a"), start)
				s.drop(testPod("a").ID)
			},
			at: time.Second,
		},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			s := newRecheckSchedule(time.Minute)
			test.schedule(s)
			if got := s.takeDue(start.Add(test.at)); !reflect.DeepEqual(got, test.wantDue) {
				t.Errorf("due at %v = %v, want %v", test.at, got, test.wantDue)
			}
			next, waiting := s.next()
			if test.wantNext == 0 {
				if waiting {
					t.Errorf("next recheck at %v, want none", next.Sub(start))
				}
				return
			}
			if !waiting || next.Sub(start) != test.wantNext {
				t.Errorf("next recheck at %v (waiting %v), want %v", next.Sub(start), waiting, test.wantNext)
			}
		})
	}
}
