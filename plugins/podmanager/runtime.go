package podmanager

import (
	"errors"
	"fmt"
	"net/url"
	"os"

	"github.com/contivpp/memif-agent/internal/logs"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/plugins/podmanager/cripods"
	"github.com/contivpp/memif-agent/plugins/podmanager/dockerpods"
)

// runtimeChoice is the runtime the pods are read from (nil: none), why it
// was chosen, and how to close it.
type runtimeChoice struct {
	runtime podapi.Runtime
	reason  string
	close   func() error
}

// chooseRuntime makes the runtime cfg names. auto takes the endpoint set
// in the config, else looks for the sockets: the CRI's first, since a node
// with a CRI runtime runs kubelet's pods there even when Docker is
// installed beside it.
func chooseRuntime(cfg Config, log logs.Logger) (runtimeChoice, error) {
	switch cfg.Runtime {
	case RuntimeNone:
		return runtimeChoice{reason: "runtime: none"}, nil
	case RuntimeDocker:
		return dockerRuntime(cfg, log, "runtime: docker")
	case RuntimeCRI:
		endpoint, reason := criEndpoint(cfg)
		return criRuntime(endpoint, log, "runtime: cri, "+reason)
	}
	if cfg.CRIEndpoint != "" {
		return criRuntime(cfg.CRIEndpoint, log, "runtime: auto, cri-endpoint is set")
	}
	if cfg.DockerEndpoint != "" {
		return dockerRuntime(cfg, log, "runtime: auto, docker-endpoint is set")
	}
	if endpoint, found := cripods.FindEndpoint(); found {
		return criRuntime(endpoint, log, "runtime: auto, found the CRI socket "+endpoint)
	}
	docker, err := dockerpods.NewClient(cfg.DockerEndpoint)
	if err != nil {
		return runtimeChoice{}, err
	}
	if socket, local := unixSocket(docker.Endpoint()); !local || exists(socket) {
		return dockerRuntime(cfg, log, "runtime: auto, no CRI socket at "+fmt.Sprint(cripods.DefaultEndpoints)+", found Docker at "+docker.Endpoint())
	}
	return runtimeChoice{reason: fmt.Sprintf("runtime: auto, found no CRI socket at %v nor Docker's at %s", cripods.DefaultEndpoints, docker.Endpoint())}, nil
}

// criEndpoint is cri-endpoint, or the first default socket that exists, or
// containerd's, which the runtime may create later.
func criEndpoint(cfg Config) (string, string) {
	if cfg.CRIEndpoint != "" {
		return cfg.CRIEndpoint, "cri-endpoint " + cfg.CRIEndpoint
	}
	if endpoint, found := cripods.FindEndpoint(); found {
		return endpoint, "found the socket " + endpoint
	}
	return cripods.DefaultEndpoints[0], "no CRI socket there yet, waiting for " + cripods.DefaultEndpoints[0]
}

func criRuntime(endpoint string, log logs.Logger, reason string) (runtimeChoice, error) {
	source, err := cripods.New(endpoint, 0, 0, log)
	if err != nil {
		return runtimeChoice{}, err
	}
	return runtimeChoice{runtime: source, reason: reason, close: source.Close}, nil
}

func dockerRuntime(cfg Config, log logs.Logger, reason string) (runtimeChoice, error) {
	client, err := dockerpods.NewClient(cfg.DockerEndpoint)
	if err != nil {
		return runtimeChoice{}, err
	}
	source := dockerpods.NewSource(client, log, cfg.DockerReconnectMinBackoff.Duration(), cfg.DockerReconnectMaxBackoff.Duration())
	return runtimeChoice{runtime: source, reason: reason}, nil
}

// unixSocket returns the path of a unix:// endpoint; local is false for
// other schemes.
func unixSocket(endpoint string) (path string, local bool) {
	parsed, err := url.Parse(endpoint)
	if err != nil || parsed.Scheme != "unix" {
		return "", false
	}
	return parsed.Path, true
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, os.ErrNotExist)
}
