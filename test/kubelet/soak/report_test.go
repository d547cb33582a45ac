package soak

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// recorder counts what the run did and the invariants' violations, each
// with its first evidence. Every goroutine of the run records into it.
type recorder struct {
	mu       sync.Mutex
	pods     map[string]int
	lostPods int
	faults   map[string]int
	// refusals are those outside the documented windows; excused those
	// inside.
	refusals, excused int
	firstExcused      string
	prepareFailures   int
	firstPrepare      string
	violations        map[string]*violation
	start             time.Time
	// logf gets the first violation of each kind and every refusal as
	// they come (the test's Logf).
	logf func(format string, args ...any)
}

type violation struct {
	kind     string
	count    int
	first    time.Time
	evidence string
}

func newRecorder(logf func(format string, args ...any)) *recorder {
	return &recorder{pods: map[string]int{}, faults: map[string]int{}, violations: map[string]*violation{}, start: time.Now(), logf: logf}
}

func (r *recorder) created(kind string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pods[kind]++
}

func (r *recorder) lost(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lostPods += n
}

func (r *recorder) fault(kind string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults[kind]++
}

// refusal records a refused memif pod: in a documented window (excused),
// or a violation.
func (r *recorder) refusal(excused bool, evidence string) {
	if !excused {
		r.violate(refusedPod, evidence)
		r.mu.Lock()
		r.refusals++
		r.mu.Unlock()
		return
	}
	r.logf("soak: refused in a documented window: %s", evidence)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.excused++
	if r.firstExcused == "" {
		r.firstExcused = evidence
	}
}

// prepareFailed counts kubelet's failed NodePrepareResources calls, which
// it retries.
func (r *recorder) prepareFailed(n int, evidence string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.prepareFailures += n
	if r.firstPrepare == "" {
		r.firstPrepare = evidence
	}
}

func (r *recorder) violate(kind, evidence string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := r.violations[kind]
	if v == nil {
		v = &violation{kind: kind, first: time.Now(), evidence: evidence}
		r.violations[kind] = v
		r.logf("soak: VIOLATION %s: %s", kind, evidence)
	}
	v.count++
}

// violationList is the violations, the first found first.
func (r *recorder) violationList() []violation {
	r.mu.Lock()
	defer r.mu.Unlock()
	var list []violation
	for _, v := range r.violations {
		list = append(list, *v)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].first.Before(list[j].first) })
	return list
}

// table is the run's summary, a Markdown table.
func (r *recorder) table(cfg config, took time.Duration, res *resources) string {
	violations := r.violationList()
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "SOAK_SEED=%d SOAK_DURATION=%s SOAK_RATE=%g SOAK_MAX_PODS=%d: ran %s\n\n", cfg.seed, cfg.duration, cfg.rate, cfg.maxPods, took.Round(time.Second))
	b.WriteString("| what | count |\n|---|---|\n")
	writeCounts(&b, "memif pods created", podKinds, r.pods)
	fmt.Fprintf(&b, "| &nbsp; lost with a removed node | %d |\n", r.lostPods)
	writeCounts(&b, "faults", faultKinds, r.faults)
	fmt.Fprintf(&b, "| refusals outside the documented windows | %d |\n", r.refusals)
	fmt.Fprintf(&b, "| refusals in them (VPP unreachable) | %d%s |\n", r.excused, first(r.firstExcused))
	fmt.Fprintf(&b, "| DRA prepares failed, retried by kubelet | %d%s |\n", r.prepareFailures, first(r.firstPrepare))
	rss, fds := res.peak()
	fmt.Fprintf(&b, "| peak agent RSS | %.1f MiB |\n", float64(rss)/1024)
	fmt.Fprintf(&b, "| peak agent fds | %d |\n", fds)
	count := 0
	for _, v := range violations {
		count += v.count
	}
	fmt.Fprintf(&b, "| invariant violations | %d |\n", count)
	for _, v := range violations {
		fmt.Fprintf(&b, "| &nbsp; %s | %d, first at %s: %s |\n", v.kind, v.count, v.first.Sub(r.start).Round(time.Second), strings.ReplaceAll(v.evidence, "|", "\\|"))
	}
	return b.String()
}

func first(evidence string) string {
	if evidence == "" {
		return ""
	}
	return " (first: " + strings.ReplaceAll(evidence, "|", "\\|") + ")"
}

// writeCounts writes a row of the total of counts over kinds, then a row
// of each kind's.
func writeCounts(b *strings.Builder, title string, kinds []string, counts map[string]int) {
	total := 0
	for _, kind := range kinds {
		total += counts[kind]
	}
	fmt.Fprintf(b, "| %s | %d |\n", title, total)
	for _, kind := range kinds {
		fmt.Fprintf(b, "| &nbsp; %s | %d |\n", kind, counts[kind])
	}
}
