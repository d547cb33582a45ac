package dradriver

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKubeconfigOnlyABoundedRegularFile: the kubeconfig is a config file
// too: a link to /dev/zero or a FIFO is refused at once, naming it.
func TestKubeconfigOnlyABoundedRegularFile(t *testing.T) {
	dir := t.TempDir()
	zero, fifo := filepath.Join(dir, "zero.kubeconfig"), filepath.Join(dir, "fifo.kubeconfig")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, want string
	}{
		{"link to /dev/zero", zero, "is a character device, not a regular file"},
		{"FIFO", fifo, "is a named pipe (FIFO), not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Plugin{cfg: Config{Kubeconfig: tc.path}}
			done := make(chan error, 1)
			go func() {
				_, err := p.kubeClient()
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), tc.path) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("kubeClient() = %v, want an error naming %s: %q", err, tc.path, tc.want)
				}
			case <-time.After(time.Minute):
				// Let a blocked read of the FIFO return, so that the test ends.
				if writer, err := os.OpenFile(tc.path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					writer.Close()
				}
				t.Fatalf("kubeClient() with kubeconfig %s still blocked after a minute", tc.path)
			}
		})
	}
}
