package e2e

import (
	"os"
	"testing"

	"github.com/eksa-metrics/eksa-metrics/test/framework"
)

// The tests run in a network namespace of their own, where the simulated
// hosts of the cluster tests live (framework.NewHost).
func TestMain(m *testing.M) { os.Exit(framework.RunInNetworkNamespace(m)) }
