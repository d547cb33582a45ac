package kubelettest

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"testing"

	"k8s.io/klog/v2"
)

const (
	// KubeletRoot is the directory replaced in the private mount namespace.
	KubeletRoot = "/var/lib/kubelet"

	// kubeletRootEnv names, for the re-executed test binary, the fresh
	// directory to mount over KubeletRoot.
	kubeletRootEnv = "KUBELETTEST_KUBELET_ROOT"
	// verbosityEnv turns kubelet logs on (klog -v level) for debugging.
	verbosityEnv = "KUBELETTEST_V"
)

// Main runs the tests of m in a private mount namespace where KubeletRoot
// is a fresh temporary directory, and returns the exit code for os.Exit.
// Call it from TestMain. It needs root; without root it fails with a message
// that says so.
func Main(m *testing.M) int {
	return InPrivateMountNamespace("these tests", func() int {
		if err := ConfigureKlog("ERROR"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return m.Run()
	})
}

// InPrivateMountNamespace runs run in a copy of this program re-executed in
// a new mount namespace where KubeletRoot is a fresh temporary directory, so
// kubelet's device manager can serve at its fixed path without touching a
// kubelet that runs on the machine. It returns run's exit code, for os.Exit;
// the program's own code before the call runs twice. who names the program
// in the message given without root.
//
// The directory is bind-mounted rather than a tmpfs so that the kubelet's
// checkpoint writes cost what they cost on a node's disk: the benchmarks
// compare plugins whose Allocate includes them.
func InPrivateMountNamespace(who string, run func() int) int {
	root := os.Getenv(kubeletRootEnv)
	if root == "" {
		return reexecInPrivateMountNamespace(who)
	}
	if err := mountKubeletRoot(root); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return run()
}

// reexecInPrivateMountNamespace re-executes this binary with the same
// arguments in a new mount namespace (Go marks its mounts private) and
// forwards the signals it gets (go test's timeout SIGQUIT, Ctrl-C), so the
// copy can dump its goroutines or tear down before it exits. If this process
// dies, the copy gets SIGTERM. It removes the kubelet root afterwards.
func reexecInPrivateMountNamespace(who string) int {
	if os.Geteuid() != 0 {
		fmt.Fprintf(os.Stderr, "kubelettest: %s run kubelet's device manager at %s and need root "+
			"for a private mount namespace; run them as root (for example with sudo)\n", who, KubeletRoot)
		return 1
	}
	root, err := os.MkdirTemp("", "kubelettest-root")
	if err != nil {
		fmt.Fprintf(os.Stderr, "kubelettest: create the kubelet root for the tests: %v\n", err)
		return 1
	}
	defer os.RemoveAll(root)
	cmd := exec.Command("/proc/self/exe", os.Args[1:]...)
	cmd.Env = append(os.Environ(), kubeletRootEnv+"="+root)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGTERM}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT)
	defer signal.Stop(signals)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "kubelettest: start the tests in a private mount namespace: %v\n", err)
		return 1
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	for {
		select {
		case sig := <-signals:
			_ = cmd.Process.Signal(sig)
		case err := <-exited:
			return exitCode(err)
		}
	}
}

func exitCode(err error) int {
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exitErr) && exitErr.ExitCode() > 0:
		return exitErr.ExitCode()
	default:
		fmt.Fprintf(os.Stderr, "kubelettest: tests in the private mount namespace: %v\n", err)
		return 1
	}
}

// mountKubeletRoot bind-mounts root over KubeletRoot. The mount point is
// created on the host if it is missing (an empty directory, as kubelet
// itself would create).
func mountKubeletRoot(root string) error {
	if err := os.MkdirAll(KubeletRoot, 0o755); err != nil {
		return fmt.Errorf("kubelettest: create mount point %s: %w", KubeletRoot, err)
	}
	if err := syscall.Mount(root, KubeletRoot, "", syscall.MS_BIND, ""); err != nil {
		return fmt.Errorf("kubelettest: bind-mount %s over %s in the private mount namespace: %w", root, KubeletRoot, err)
	}
	return nil
}

// ConfigureKlog keeps the kubelet's logs below stderrThreshold (a klog
// severity: INFO, WARNING, ERROR, FATAL) out of the output.
// KUBELETTEST_V=N shows everything up to verbosity N instead.
func ConfigureKlog(stderrThreshold string) error {
	flags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(flags)
	if level := os.Getenv(verbosityEnv); level != "" {
		if _, err := strconv.Atoi(level); err != nil {
			return fmt.Errorf("kubelettest: %s=%q: want a klog verbosity number: %w", verbosityEnv, level, err)
		}
		return flags.Parse([]string{"-logtostderr=true", "-v=" + level})
	}
	if err := flags.Parse([]string{"-logtostderr=false", "-stderrthreshold=" + stderrThreshold}); err != nil {
		return fmt.Errorf("kubelettest: configure klog: %w", err)
	}
	klog.SetOutput(io.Discard)
	return nil
}
