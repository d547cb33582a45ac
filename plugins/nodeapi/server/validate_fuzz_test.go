package server

import (
	"strings"
	"testing"
)

// FuzzValidatePodID checks that every namespace and pod name the node API
// accepts is a Kubernetes name: nothing that could traverse a path, forge
// a log line or exceed the length limits gets through.
func FuzzValidatePodID(f *testing.F) {
	f.Add("default", "web-0")
	f.Add("kube-system", "a.b.c")
	f.Add("..", "../../etc")
	f.Add("default", "web\nlevel=error")
	f.Add("Default", "wéb")
	f.Add("default", strings.Repeat("a", 254))
	f.Fuzz(func(t *testing.T, namespace, name string) {
		if validateNamespace(namespace) == nil {
			if !isKubernetesName(namespace, false) || len(namespace) > dns1123LabelMaxLength {
				t.Errorf("namespace %q accepted", namespace)
			}
		}
		if validatePodName(name) == nil {
			if !isKubernetesName(name, true) || len(name) > dns1123SubdomainMaxLength {
				t.Errorf("pod name %q accepted", name)
			}
		}
	})
}

// isKubernetesName is the DNS-1123 rule spelled out without regexps:
// lower-case letters, digits and '-' (and '.' between labels in a
// subdomain), each label starting and ending alphanumeric.
func isKubernetesName(name string, dots bool) bool {
	labels := []string{name}
	if dots {
		labels = strings.Split(name, ".")
	}
	for _, label := range labels {
		if label == "" || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}
