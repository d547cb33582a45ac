package agentwiring

import (
	cnprometheus "github.com/ligato/cn-infra/rpc/prometheus"
	"github.com/namsral/flag"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"k8s.io/client-go/kubernetes"
)

// Option changes how New wires the agent. The agent's command takes
// none; each exists for an agent that shares its process with others.
type Option func(*options)

type options struct {
	metrics            *prometheus.Registry
	kubeletInterceptor grpc.UnaryServerInterceptor
	draClient          kubernetes.Interface
}

// WithMetrics registers the plugins' metrics in registry, which the
// metrics listener serves, instead of Prometheus's default registry: two
// agents in one process would otherwise register the same metrics twice.
func WithMetrics(registry *prometheus.Registry) Option {
	return func(o *options) { o.metrics = registry }
}

// WithKubeletInterceptor wraps each of kubelet's gRPC calls to the agent,
// the device plugin's and the DRA driver's, in interceptor: a test times
// or counts them as they arrive and are answered.
func WithKubeletInterceptor(interceptor grpc.UnaryServerInterceptor) Option {
	return func(o *options) { o.kubeletInterceptor = interceptor }
}

// WithDRAClient gives the DRA driver client as its API server client, in
// place of the one dradriver.conf's kubeconfig makes: a test times or
// counts the driver's requests.
func WithDRAClient(client kubernetes.Interface) Option {
	return func(o *options) { o.draClient = client }
}

// registry is where the plugins register their metrics: plugin's default
// registry, or the one WithMetrics gave.
func (o options) registry(plugin *cnprometheus.Plugin) cnprometheus.API {
	if o.metrics == nil {
		return plugin
	}
	return ownRegistry{API: plugin, registry: o.metrics}
}

// ownRegistry is the Prometheus plugin with its default registry replaced
// by registry for Register and Unregister, the methods the plugins call.
type ownRegistry struct {
	cnprometheus.API
	registry *prometheus.Registry
}

func (r ownRegistry) Register(path string, collector prometheus.Collector) error {
	if path != cnprometheus.DefaultRegistry {
		return r.API.Register(path, collector)
	}
	return r.registry.Register(collector)
}

func (r ownRegistry) Unregister(path string, collector prometheus.Collector) bool {
	if path != cnprometheus.DefaultRegistry {
		return r.API.Unregister(path, collector)
	}
	return r.registry.Unregister(collector)
}

// FlagValue is the value of the command-line flag called name, "" when
// no such flag is declared (an agent in a test's process declares none).
func FlagValue(name string) string {
	if found := flag.CommandLine.Lookup(name); found != nil {
		return found.Value.String()
	}
	return ""
}
