package eventloop

import (
	"time"

	"github.com/contivpp/memif-agent/internal/configfile"
)

// Config tunes the event loop. The JSON names are the keys of the
// controller's config file.
type Config struct {
	// QueueSize is how many background events (all but admissions) may
	// wait in the queue; PushEvent fails with api.ErrEventQueueFull beyond
	// it.
	QueueSize int `json:"event-queue-size"`
	// AdmissionQueueSize is how many more places the queue has that only
	// admission events (api.EventSpec.Admission: kubelet's Allocate, DRA
	// NodePrepareResources) may take, so that background events filling
	// the queue cannot refuse an admission.
	AdmissionQueueSize int `json:"admission-queue-size"`
	// HistorySize is how many processed events the history keeps.
	HistorySize int `json:"event-history-size"`
	// HealingDelay is the wait before the first healing resync after an
	// error; it doubles after every failed healing resync.
	HealingDelay configfile.Duration `json:"healing-delay"`
	// HealingMaxDelay caps the doubling of HealingDelay.
	HealingMaxDelay configfile.Duration `json:"healing-max-delay"`
	// CommitTimeout bounds one commit to the Committer.
	CommitTimeout configfile.Duration `json:"commit-timeout"`
}

// DefaultConfig returns the configuration used for keys a config file leaves
// out.
func DefaultConfig() Config {
	return Config{
		QueueSize:          100,
		AdmissionQueueSize: 100,
		HistorySize:        1000,
		HealingDelay:       configfile.Duration(time.Second),
		HealingMaxDelay:    configfile.Duration(time.Minute),
		CommitTimeout:      configfile.Duration(30 * time.Second),
	}
}

// MaxQueueSize bounds each of the queue's two sizes, and MaxHistorySize the
// history: both are allocated at start, and a mistyped size would exhaust
// memory before the agent could say which key was wrong.
const (
	MaxQueueSize   = 1 << 16
	MaxHistorySize = 1 << 16
)

// Validate checks every key and returns all problems found, each a
// *configfile.KeyError.
func (c Config) Validate() error {
	var problems configfile.Problems
	if c.QueueSize < 1 || c.QueueSize > MaxQueueSize {
		problems.Addf("event-queue-size", "must be 1..%d, got %d", MaxQueueSize, c.QueueSize)
	}
	if c.AdmissionQueueSize < 1 || c.AdmissionQueueSize > MaxQueueSize {
		problems.Addf("admission-queue-size", "must be 1..%d, got %d", MaxQueueSize, c.AdmissionQueueSize)
	}
	if c.HistorySize < 1 || c.HistorySize > MaxHistorySize {
		problems.Addf("event-history-size", "must be 1..%d, got %d", MaxHistorySize, c.HistorySize)
	}
	problems.CheckPositive("healing-delay", c.HealingDelay, "1s")
	if c.HealingMaxDelay < c.HealingDelay {
		problems.Addf("healing-max-delay", "must not be less than healing-delay (%s), got %s", c.HealingDelay, c.HealingMaxDelay)
	}
	problems.CheckPositive("commit-timeout", c.CommitTimeout, "30s")
	return problems.Err()
}
