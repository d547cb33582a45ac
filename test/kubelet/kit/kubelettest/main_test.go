package kubelettest_test

import (
	"os"
	"testing"

	"github.com/contivpp/memif-agent/test/kubelet/kit/kubelettest"
)

func TestMain(m *testing.M) { os.Exit(kubelettest.Main(m)) }
