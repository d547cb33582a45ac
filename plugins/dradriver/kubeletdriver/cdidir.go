package kubeletdriver

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"tags.cncf.io/container-device-interface/pkg/cdi"
	cdispec "tags.cncf.io/container-device-interface/specs-go"
)

// How the container runtime sees a spec: containerd 2.x keeps a CDI cache
// (the CDI library's, with auto-refresh) that rescans its spec directories by path
// when fsnotify reports a rename, a removal or a write of a .json or .yaml
// file there; it ignores a plain create, and an explicit refresh does
// nothing while the watch runs. The driver therefore writes a spec as a
// temporary file in the spec directory itself, renamed over the spec's
// name (the CDI library's WriteSpec): the rename away from the temporary
// name is the event the runtime's watch acts on. A spec written elsewhere
// and moved in would raise only a create, which the runtime's cache never
// sees.

// writeSpec writes a claim's spec into the CDI directory, then reads it
// back by path, as the runtime will, and checks that it resolves each of
// the devices kubelet is about to be handed.
func (d *Driver) writeSpec(spec *cdispec.Spec, name string) error {
	if err := d.checkCDIDir(); err != nil {
		return err
	}
	if err := d.specs.WriteSpec(spec, name); err != nil {
		return err
	}
	written, err := cdi.ReadSpec(filepath.Join(d.cfg.CDIDir, name), 0)
	if err != nil {
		return fmt.Errorf("read back: %w", err)
	}
	for _, device := range spec.Devices {
		if written.GetDevice(device.Name) == nil {
			return fmt.Errorf("read back from %s: device %s missing", written.GetPath(), device.Name)
		}
	}
	return nil
}

// checkCDIDir makes sure that what the driver writes lands where the
// runtime reads. A directory removed by path is made again, root-only
// (the runtime's watch finds it again by path); left to the CDI library,
// it would come back world-readable. A directory that was removed while
// the agent holds it mounted (the agent in a pod, the host's directory
// deleted or replaced) is one the runtime can no longer see: that needs
// the agent's pod restarted, and the error says so.
func (d *Driver) checkCDIDir() error {
	info, err := os.Stat(d.cfg.CDIDir)
	if errors.Is(err, os.ErrNotExist) {
		d.log.WarnS("CDI directory removed while the agent ran: making it again", "dir", d.cfg.CDIDir, "mode", fmt.Sprintf("%#o", cdiDirMode))
		if err := os.Mkdir(d.cfg.CDIDir, cdiDirMode); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("make the CDI directory %s again: %w", d.cfg.CDIDir, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("CDI directory %s: %w", d.cfg.CDIDir, err)
	}
	if stat, ok := info.Sys().(*syscall.Stat_t); ok && stat.Nlink == 0 {
		return fmt.Errorf("CDI directory %s was deleted on the host after the agent mounted it, so the container runtime cannot see specs written there; restart the agent's pod so that it mounts the directory again", d.cfg.CDIDir)
	}
	return nil
}
