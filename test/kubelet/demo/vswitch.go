package demo

import (
	"context"
	"os"
	"path/filepath"

	"github.com/contivpp/memif-agent/test/kit/vpp"
	"github.com/contivpp/memif-agent/test/kit/vppstate"
)

// vswitch is the real VPP the agent programs: the demo only reads it, over
// its own connection to VPP's binary API.
type vswitch struct {
	vpp     *vpp.VPP
	state   *vppstate.State
	version string
}

// startVswitch starts VPP (scripts/vpp.sh's) under dir.
func startVswitch(ctx context.Context, dir string) (*vswitch, error) {
	prefix, err := vpp.Prefix()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	v, err := vpp.Launch(prefix, dir)
	if err != nil {
		if v != nil {
			v.Stop()
		}
		return nil, err
	}
	sw := &vswitch{vpp: v}
	if sw.state, err = vppstate.Dial(ctx, v.APISocket, "memif-demo"); err != nil {
		v.Stop()
		return nil, err
	}
	if sw.version, err = sw.state.Version(ctx); err != nil {
		sw.stop()
		return nil, err
	}
	return sw, nil
}

func (sw *vswitch) stop() error {
	sw.state.Close()
	return sw.vpp.Stop()
}

// vswitchDir is where VPP's sockets live in the demo's work directory.
func vswitchDir(workDir string) string { return filepath.Join(workDir, "vpp") }
