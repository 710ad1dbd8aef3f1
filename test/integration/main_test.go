package integration

import (
	"os"
	"testing"

	"github.com/eksa-metrics/eksa-metrics/test/framework"
)

// Each process of these tests (make integration runs two shards at once)
// has a network namespace of its own: the shards' API servers, proxies and
// listeners never meet on one loopback.
func TestMain(m *testing.M) { os.Exit(framework.RunInNetworkNamespace(m)) }
