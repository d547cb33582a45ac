package claims_test

import oci "github.com/opencontainers/runtime-spec/specs-go"

// ociSpec is the container spec a runtime holds before CDI edits.
func ociSpec() *oci.Spec {
	return &oci.Spec{Version: oci.Version, Process: &oci.Process{Env: []string{"PATH=/usr/bin"}}, Linux: &oci.Linux{}}
}
