package wiring

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/plugins/vswitch/owner"
)

const (
	// maxInterfaceNameLength is what the VPP interface tag holds after
	// the agent's prefix.
	maxInterfaceNameLength = owner.MaxNameLength
	// nameHashLength is how many hex digits of SHA-256 end a cut name.
	nameHashLength = 8
	// nameSeparator cannot occur in Kubernetes names.
	nameSeparator = "_"
)

// interfaceName names the vswitch-side interface of memif memifID of the
// socket that owner (a container name, or the allocation ID when the
// container is unknown) of pod holds.
func interfaceName(pod podapi.PodID, owner string, memifID int) string {
	name := strings.Join([]string{"memif", pod.Namespace, pod.Name, owner, strconv.Itoa(memifID)}, nameSeparator)
	if len(name) <= maxInterfaceNameLength {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	keep := maxInterfaceNameLength - len(nameSeparator) - nameHashLength
	return name[:keep] + nameSeparator + hex.EncodeToString(sum[:])[:nameHashLength]
}
