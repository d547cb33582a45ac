package server

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/contivpp/memif-agent/internal/configfile"
)

// Kubernetes object naming (k8s.io/apimachinery/pkg/util/validation):
// namespaces are DNS-1123 labels, pod names DNS-1123 subdomains. A name is
// checked against them before it is in any message, and a refusal quotes
// it once, cut (configfile.Echo): a caller may send megabytes.
const (
	dns1123LabelMaxLength     = 63
	dns1123SubdomainMaxLength = 253
)

var dns1123Label = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// labelRule says what a DNS-1123 label is made of.
const labelRule = "lower-case letters, digits and '-', starting and ending with a letter or digit"

func validateNamespace(namespace string) error {
	switch {
	case namespace == "":
		return errors.New("invalid namespace: empty")
	case len(namespace) > dns1123LabelMaxLength:
		return fmt.Errorf("invalid namespace %s: %d bytes, a namespace has at most %d", configfile.Echo(namespace), len(namespace), dns1123LabelMaxLength)
	case !dns1123Label.MatchString(namespace):
		return fmt.Errorf("invalid namespace %s: must be %s", configfile.Echo(namespace), labelRule)
	}
	return nil
}

func validatePodName(name string) error {
	switch {
	case name == "":
		return errors.New("invalid pod name: empty")
	case len(name) > dns1123SubdomainMaxLength:
		return fmt.Errorf("invalid pod name %s: %d bytes, a pod name has at most %d", configfile.Echo(name), len(name), dns1123SubdomainMaxLength)
	}
	labels := strings.Split(name, ".")
	for i, label := range labels {
		if problem := labelProblem(label); problem != "" {
			return fmt.Errorf("invalid pod name %s: part %d of %d (between dots) %s", configfile.Echo(name), i+1, len(labels), problem)
		}
	}
	return nil
}

// labelProblem says what is wrong with one label of a subdomain, without
// quoting it: the caller quotes the whole name once.
func labelProblem(label string) string {
	switch {
	case label == "":
		return "is empty"
	case len(label) > dns1123LabelMaxLength:
		return fmt.Sprintf("has %d bytes, more than %d", len(label), dns1123LabelMaxLength)
	case !dns1123Label.MatchString(label):
		return "must be " + labelRule
	}
	return ""
}
