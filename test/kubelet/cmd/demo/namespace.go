package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/contivpp/memif-agent/test/kubelet/kubelettest"
)

// inNamespaceEnv marks the re-executed demo.
const inNamespaceEnv = "MEMIF_DEMO_IN_PRIVATE_MOUNT_NAMESPACE"

// reexecInPrivateMountNamespace runs this command again in a new mount
// namespace and forwards Ctrl-C to it, so that the demo tears down before
// it exits.
func reexecInPrivateMountNamespace() int {
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "demo: needs root (dockerd, kubelet's device manager at /var/lib/kubelet, DPDK); run it with sudo")
		return 1
	}
	cmd := exec.Command("/proc/self/exe", os.Args[1:]...)
	cmd.Env = append(os.Environ(), inNamespaceEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// SIGTERM if this process dies, so the demo still tears down.
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGTERM}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(signals)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "demo: start in a private mount namespace: %v\n", err)
		return 1
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	for {
		select {
		case sig := <-signals:
			_ = cmd.Process.Signal(sig)
		case err := <-exited:
			var exitErr *exec.ExitError
			if errors.As(err, &exitErr) {
				return exitErr.ExitCode()
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "demo: %v\n", err)
				return 1
			}
			return 0
		}
	}
}

// mountKubeletRoot covers /var/lib/kubelet with an empty tmpfs in this
// namespace only.
func mountKubeletRoot() error {
	if err := os.MkdirAll(kubelettest.KubeletRoot, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", kubelettest.KubeletRoot, err)
	}
	if err := syscall.Mount("tmpfs", kubelettest.KubeletRoot, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=0755,size=64m"); err != nil {
		return fmt.Errorf("mount a tmpfs over %s in a private mount namespace: %w", kubelettest.KubeletRoot, err)
	}
	return nil
}

// quietKlog keeps kubelet's logs out of the demo's output; what matters
// reaches the demo as errors from the device manager's calls.
func quietKlog() {
	flags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(flags)
	_ = flags.Parse([]string{"-logtostderr=false", "-stderrthreshold=FATAL"})
	klog.SetOutput(io.Discard)
}
