package health

import (
	"net/http"
	"slices"
	"strings"

	"github.com/ligato/cn-infra/health/statuscheck/model/status"
	"github.com/unrolled/render"

	"github.com/contivpp/memif-agent/plugins/health/probesocket"
)

// Paths of the probes, on the probe socket and the agent's HTTP server.
const (
	ReadinessPath = probesocket.ReadinessPath
	LivenessPath  = probesocket.LivenessPath
)

// probeAnswer is the JSON body of both probes.
type probeAnswer struct {
	State   string         `json:"state"`
	Plugins []pluginAnswer `json:"plugins,omitempty"`
}

type pluginAnswer struct {
	Name  string `json:"name"`
	State string `json:"state"`
	Error string `json:"error,omitempty"`
}

func (p *Plugin) answer() (probeAnswer, bool) {
	agentStatus := p.GetAgentStatus()
	answer := probeAnswer{State: agentStatus.State.String()}
	for _, plugin := range agentStatus.Plugins {
		answer.Plugins = append(answer.Plugins, pluginAnswer{Name: plugin.Name, State: plugin.State.String(), Error: plugin.Error})
	}
	slices.SortFunc(answer.Plugins, func(a, b pluginAnswer) int { return strings.Compare(a.Name, b.Name) })
	return answer, agentStatus.State == status.OperationalState_OK
}

func (p *Plugin) readinessHandler(formatter *render.Render) http.HandlerFunc {
	return func(writer http.ResponseWriter, _ *http.Request) {
		answer, ready := p.answer()
		code := http.StatusOK
		if !ready {
			code = http.StatusServiceUnavailable
		}
		formatter.JSON(writer, code, answer)
	}
}

func (p *Plugin) livenessHandler(formatter *render.Render) http.HandlerFunc {
	return func(writer http.ResponseWriter, _ *http.Request) {
		answer, _ := p.answer()
		formatter.JSON(writer, http.StatusOK, answer)
	}
}
