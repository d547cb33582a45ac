package agentwiring

import (
	"slices"
	"testing"

	"github.com/ligato/cn-infra/config"
)

// TestEveryPluginConfigIsInTheTable: New asks for the config of each
// plugin in PluginConfigs, and of no other, so that the table the config
// checks and the test harness read is the list the agent reads.
func TestEveryPluginConfigIsInTheTable(t *testing.T) {
	var asked []string
	New(func(name string, _ ...config.Option) config.PluginConfig {
		asked = append(asked, name)
		return nil
	})
	var table []string
	for _, file := range PluginConfigs {
		table = append(table, file.Name)
		if file.New() == nil {
			t.Errorf("%s: New returns nil", file.Name)
		}
	}
	slices.Sort(asked)
	slices.Sort(table)
	if !slices.Equal(asked, table) {
		t.Errorf("New asks for the configs %v; PluginConfigs lists %v", asked, table)
	}
}
