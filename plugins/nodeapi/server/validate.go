package server

import (
	"fmt"
	"regexp"
	"strings"
)

// Kubernetes object naming (k8s.io/apimachinery/pkg/util/validation):
// namespaces are DNS-1123 labels, pod names DNS-1123 subdomains.
const (
	dns1123LabelMaxLength     = 63
	dns1123SubdomainMaxLength = 253
)

var dns1123Label = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

func validateNamespace(namespace string) error {
	if err := validateLabel(namespace); err != nil {
		return fmt.Errorf("invalid namespace %q: %w", namespace, err)
	}
	return nil
}

func validatePodName(name string) error {
	if len(name) > dns1123SubdomainMaxLength {
		return fmt.Errorf("invalid pod name %q: longer than %d characters", name, dns1123SubdomainMaxLength)
	}
	for _, label := range strings.Split(name, ".") {
		if err := validateLabel(label); err != nil {
			return fmt.Errorf("invalid pod name %q: %w", name, err)
		}
	}
	return nil
}

func validateLabel(label string) error {
	if label == "" {
		return fmt.Errorf("empty name or name part")
	}
	if len(label) > dns1123LabelMaxLength {
		return fmt.Errorf("part %q is longer than %d characters", label, dns1123LabelMaxLength)
	}
	if !dns1123Label.MatchString(label) {
		return fmt.Errorf("part %q must be lower-case letters, digits and '-', starting and ending with a letter or digit", label)
	}
	return nil
}
