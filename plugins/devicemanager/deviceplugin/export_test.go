package deviceplugin

import (
	"context"

	"github.com/contivpp/memif-agent/internal/unixsocket"
)

// RegisterWithKubelet makes one Register call to the kubelet socket
// incarnation kubelet, as the supervisor does.
func RegisterWithKubelet(ctx context.Context, s *Server, kubelet unixsocket.ID) error {
	return s.registerWithKubelet(ctx, kubelet)
}
