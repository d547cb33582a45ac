package server_test

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	memifv1 "github.com/contivpp/memif-agent/api/memif/v1"
	"github.com/contivpp/memif-agent/plugins/nodeapi/server"
)

// maxStatusMessage bounds what a refusal may say: memifctl prints it, and
// a caller must not make the agent build megabytes of it.
const maxStatusMessage = 512

// TestRefusalsQuoteInputOnceAndCut: a name beyond Kubernetes' limits is
// refused with a short message that quotes it once, cut. Before, a pod
// name of 4 MiB came back whole in the status message, and a bad
// namespace was quoted twice.
func TestRefusalsQuoteInputOnceAndCut(t *testing.T) {
	devices, _ := startWithWebMemif(t)
	client := startAPI(t, devices, nil, server.Config{})
	cases := []struct {
		name, namespace, pod string
		wantCode             codes.Code
		// quoted is what the message must quote exactly once.
		quoted string
	}{
		// gRPC takes messages of up to 4 MiB: this name is the longest
		// that reaches the API.
		{"pod name of almost 4 MiB", "default", strings.Repeat("a", 4<<20-64), codes.InvalidArgument, `"` + strings.Repeat("a", 100) + `"... (4194140 more bytes)`},
		{"pod name of 4 MiB", "default", strings.Repeat("a", 4<<20), codes.ResourceExhausted, ""},
		{"namespace of 1 MiB", strings.Repeat("n", 1<<20), "web", codes.InvalidArgument, "(1048476 more bytes)"},
		{"namespace of 64 bytes", strings.Repeat("n", 64), "web", codes.InvalidArgument, `"` + strings.Repeat("n", 64) + `"`},
		{"upper-case namespace", "Default-ns", "web", codes.InvalidArgument, `"Default-ns"`},
		{"upper-case part of a pod name", "default", "web.Bad.x", codes.InvalidArgument, `"web.Bad.x": part 2 of 3`},
		{"part of a pod name longer than 63", "default", "web." + strings.Repeat("p", 64), codes.InvalidArgument, "has 64 bytes, more than 63"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := client.GetPodMemifs(t.Context(), &memifv1.GetPodMemifsRequest{Namespace: tc.namespace, Name: tc.pod})
			msg := status.Convert(err).Message()
			if code := status.Code(err); code != tc.wantCode {
				t.Errorf("GetPodMemifs code = %v, want %v (message %.300q)", code, tc.wantCode, msg)
			}
			if len(msg) > maxStatusMessage {
				t.Errorf("the status message has %d bytes, want at most %d: %.300q...", len(msg), maxStatusMessage, msg)
			}
			if tc.quoted != "" && strings.Count(msg, tc.quoted) != 1 {
				t.Errorf("the status message %.600q quotes %.120q %d times, want once", msg, tc.quoted, strings.Count(msg, tc.quoted))
			}
		})
	}
}
