package manager

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestRegistrationErrorKind(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"Register ran out of time", fmt.Errorf("register with kubelet: %w", status.Error(codes.DeadlineExceeded, "context deadline exceeded")), "registration-timeout"},
		{"deadline before the call", fmt.Errorf("register: %w", context.DeadlineExceeded), "registration-timeout"},
		{"kubelet refused", fmt.Errorf("register: %w", status.Error(codes.Unknown, "device plugin already connected")), "registration-refused"},
		{"kubelet absent", errors.New("kubelet registration socket: no such file or directory"), "registration"},
		{"kubelet not listening", fmt.Errorf("register: %w", status.Error(codes.Unavailable, "connection refused")), "registration"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := registrationErrorKind(tc.err); got != tc.want {
				t.Errorf("registrationErrorKind(%v) = %q, want %q", tc.err, got, tc.want)
			}
		})
	}
}
