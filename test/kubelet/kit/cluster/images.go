package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/contivpp/memif-agent/test/kit/ociimage"
)

// containerdNode is a node whose containerd ctr reaches: the first node
// (the Cluster) or an added one (Node).
type containerdNode interface {
	NodeArgv(argv ...string) []string
	RuntimeSocket() string
	Ctr(ctx context.Context, args ...string) (string, error)
}

// runCtr runs ctr against node's containerd in the k8s.io namespace, in
// the node's namespaces; name names the node in an error.
func runCtr(ctx context.Context, node containerdNode, ctrBinary, name string, args []string) (string, error) {
	argv := node.NodeArgv(append([]string{ctrBinary, "--address", node.RuntimeSocket(), "--namespace", "k8s.io"}, args...)...)
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ctr on %s %s: %w: %s", name, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// importImage imports an image archive into node, where pods find it
// without a registry.
func importImage(ctx context.Context, node containerdNode, archive string) error {
	if _, err := node.Ctr(ctx, "images", "import", archive); err != nil {
		return fmt.Errorf("cluster: import %s: %w", archive, err)
	}
	return nil
}

// importOCIImage writes img as an archive in dir and imports it into node.
func importOCIImage(ctx context.Context, node containerdNode, dir string, img ociimage.Image) error {
	archive, err := os.CreateTemp(dir, "image-*.tar")
	if err != nil {
		return fmt.Errorf("cluster: image archive: %w", err)
	}
	archive.Close()
	defer os.Remove(archive.Name())
	if err := img.WriteArchive(archive.Name()); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	return importImage(ctx, node, archive.Name())
}
