package eventloop

import (
	"fmt"
	"time"

	"github.com/contivpp/memif-agent/internal/configfile"
)

// Config tunes the event loop. The JSON names are the keys of the
// controller's config file.
type Config struct {
	// QueueSize is how many events may wait in the queue; PushEvent fails
	// with api.ErrEventQueueFull beyond it.
	QueueSize int `json:"event-queue-size"`
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
		QueueSize:       100,
		HistorySize:     1000,
		HealingDelay:    configfile.Duration(time.Second),
		HealingMaxDelay: configfile.Duration(time.Minute),
		CommitTimeout:   configfile.Duration(30 * time.Second),
	}
}

// MaxQueueSize and MaxHistorySize bound the queue and the history: both
// are allocated at start, and a mistyped size would exhaust memory before
// the agent could say which key was wrong.
const (
	MaxQueueSize   = 1 << 16
	MaxHistorySize = 1 << 16
)

// Validate reports the first invalid key, by its config-file name.
func (c Config) Validate() error {
	switch {
	case c.QueueSize < 1 || c.QueueSize > MaxQueueSize:
		return fmt.Errorf("invalid controller config: event-queue-size must be 1..%d, got %d", MaxQueueSize, c.QueueSize)
	case c.HistorySize < 1 || c.HistorySize > MaxHistorySize:
		return fmt.Errorf("invalid controller config: event-history-size must be 1..%d, got %d", MaxHistorySize, c.HistorySize)
	case c.HealingDelay <= 0:
		return fmt.Errorf("invalid controller config: healing-delay must be positive, got %s", c.HealingDelay)
	case c.HealingMaxDelay < c.HealingDelay:
		return fmt.Errorf("invalid controller config: healing-max-delay (%s) must not be less than healing-delay (%s)",
			c.HealingMaxDelay, c.HealingDelay)
	case c.CommitTimeout <= 0:
		return fmt.Errorf("invalid controller config: commit-timeout must be positive, got %s", c.CommitTimeout)
	}
	return nil
}
