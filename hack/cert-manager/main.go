//go:build ignore

// A cert-manager controller for the test bed, built by
// hack/build-cert-manager.sh from the cert-manager module (whose own
// cmd/controller module the Go module proxy does not serve). It runs the
// controllers a CA and a self-signed issuer need: the Certificate
// lifecycle (trigger, key manager, request manager, issuing, readiness,
// revision manager), the CertificateRequest approver and signers, and the
// Issuer and ClusterIssuer controllers. No leader election, no webhook,
// no ACME: one process on loopback for the tests.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"syscall"
	"time"

	controllerpkg "github.com/cert-manager/cert-manager/pkg/controller"

	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	_ "github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	_ "github.com/cert-manager/cert-manager/pkg/controller/issuers"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the cluster")
	namespace := flag.String("cluster-resource-namespace", "cert-manager", "where ClusterIssuers read their Secrets")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *kubeconfig, *namespace); err != nil {
		fmt.Fprintln(os.Stderr, "cert-manager:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig, namespace string) error {
	f, err := controllerpkg.NewContextFactory(ctx, controllerpkg.ContextOptions{
		Kubeconfig:         kubeconfig,
		KubernetesAPIQPS:   50,
		KubernetesAPIBurst: 100,
		IssuerOptions:      controllerpkg.IssuerOptions{ClusterResourceNamespace: namespace},
		CertificateOptions: controllerpkg.CertificateOptions{CertificateRequestMinimumBackoffDuration: time.Minute},
	})
	if err != nil {
		return err
	}
	var names []string
	for name := range controllerpkg.Known() {
		names = append(names, name)
	}
	sort.Strings(names)
	var loops []controllerpkg.Interface
	for _, name := range names {
		c, err := controllerpkg.Known()[name](f)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		loops = append(loops, c)
	}
	shared, err := f.Build()
	if err != nil {
		return err
	}
	shared.KubeSharedInformerFactory.Start(ctx.Done())
	shared.SharedInformerFactory.Start(ctx.Done())
	fmt.Fprintf(os.Stderr, "cert-manager: running %v\n", names)
	done := make(chan error, len(loops))
	for _, c := range loops {
		go func() { done <- c.Run(2, ctx) }()
	}
	for range loops {
		if err := <-done; err != nil && ctx.Err() == nil {
			return err
		}
	}
	return nil
}
