// Command eksa-metrics renders and applies secure Prometheus metrics for EKS
// Anywhere clusters.
package main

import (
	"os"

	"github.com/eksa-metrics/eksa-metrics/internal/cli"
)

func main() { os.Exit(cli.Run()) }
