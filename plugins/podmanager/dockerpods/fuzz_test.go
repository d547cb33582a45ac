package dockerpods

import (
	"errors"
	"testing"

	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

// FuzzParseLabels checks that any label set either parses into a pod whose ID
// round-trips through podapi.ParsePodID, or is refused as ErrNotPodContainer.
func FuzzParseLabels(f *testing.F) {
	f.Add("web", "default", "uid-1", "app", DockerTypeContainer, "io.contivpp.memif.secret", "s")
	f.Add("web", "default", "uid-1", "POD", DockerTypeSandbox, "", "")
	f.Add("a/b", "default", "uid-1", "app", "", "x", "y")
	f.Fuzz(func(t *testing.T, name, namespace, uid, container, dockerType, annotationKey, annotationValue string) {
		labels := map[string]string{
			LabelPodName:                          name,
			LabelPodNamespace:                     namespace,
			LabelPodUID:                           uid,
			LabelContainerName:                    container,
			LabelDockerType:                       dockerType,
			AnnotationLabelPrefix + annotationKey: annotationValue,
		}
		parsed, err := ParseLabels(labels)
		if err != nil {
			if !errors.Is(err, ErrNotPodContainer) {
				t.Fatalf("ParseLabels error %v does not match ErrNotPodContainer", err)
			}
			return
		}
		id, err := podapi.ParsePodID(parsed.Pod.ID.String())
		if err != nil || id != parsed.Pod.ID {
			t.Fatalf("pod ID %q does not round-trip: %v, %v", parsed.Pod.ID, id, err)
		}
		if parsed.Pod.UID != uid || parsed.Pod.UID == "" {
			t.Fatalf("uid = %q, want %q", parsed.Pod.UID, uid)
		}
		if !parsed.Sandbox && parsed.ContainerName == "" {
			t.Fatal("app container without a name was accepted")
		}
		if annotationKey != "" && parsed.Annotations[annotationKey] != annotationValue {
			t.Fatalf("annotation %q = %q, want %q", annotationKey, parsed.Annotations[annotationKey], annotationValue)
		}
	})
}
