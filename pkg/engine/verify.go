package engine

import (
	"context"
	"crypto/x509"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/eksa-metrics/eksa-metrics/pkg/cluster"
	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
	"github.com/eksa-metrics/eksa-metrics/pkg/verify"
)

// VerifyOptions control Verify.
type VerifyOptions struct {
	Concurrency int
	Timeout     time.Duration
	// Cleanup reports a failure to delete a temporary object, this run's or
	// one an earlier run left.
	Cleanup func(error)
	// Leftover names each temporary object an earlier, killed run left,
	// which this run deleted (verify.StaleAfter).
	Leftover func(object string)
	// NotInstalled names a management component whose Deployment does not
	// exist, so there is nothing to verify.
	NotInstalled func(id string)
}

// Verify finds every target of a render: in the workload cluster the API
// server and, from the Node objects, every node's components; on a
// management cluster every management controller's pods, from the
// EndpointSlices of its metrics Service. It makes the temporary identities,
// checks every target, and deletes the identities again, also when ctx is
// cancelled.
func Verify(ctx context.Context, cl *Clusters, r *render.Result, opts VerifyOptions) ([]verify.Result, error) {
	workload := cl.Workload
	nodeList, err := workload.Core.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the workload cluster's nodes: %w", err)
	}
	var nodes []verify.Node
	for _, n := range nodeList.Items {
		vn := verify.Node{Name: n.Name}
		_, vn.ControlPlane = n.Labels[spec.ControlPlaneNodeLabel]
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP || vn.Address == "" && a.Type != corev1.NodeHostName {
				vn.Address = a.Address
			}
		}
		if vn.Address != "" {
			nodes = append(nodes, vn)
		}
	}
	targets := verify.Targets(r.Config, strings.TrimSuffix(workload.Server, "/"), nodes)
	mgmt, err := managementTargets(ctx, cl.Management, r, opts.NotInstalled)
	if err != nil {
		return nil, err
	}
	targets = append(targets, mgmt...)
	if r.Config.KubeletServingCertificates {
		approvers, err := approverTargets(ctx, workload)
		if err != nil {
			return nil, err
		}
		targets = append(targets, approvers...)
	}

	ids, err := verify.NewIdentities(ctx, workload.Core, r.Config.Scrapers, verify.IdentityOptions{Removed: opts.Leftover, Failed: opts.Cleanup})
	defer func() {
		// A context of its own: cleanup also runs after Ctrl-C.
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := ids.Cleanup(cctx); err != nil && opts.Cleanup != nil {
			opts.Cleanup(err)
		}
	}()
	if err != nil {
		return nil, err
	}
	servingCA, err := readServingCA(ctx, workload, r)
	if err != nil {
		return nil, err
	}
	var kubeletCA *x509.CertPool
	if r.Config.KubeletServingCertificates {
		if kubeletCA, err = readCA(ctx, workload, templates.SystemNS, templates.KubeletServingCA, nil); err != nil {
			return nil, err
		}
	}
	return verify.Run(ctx, targets, verify.Options{ScraperToken: ids.ScraperToken, UnboundToken: ids.UnboundToken, ClusterCA: workload.CA, ServingCA: servingCA, KubeletCA: kubeletCA,
		Concurrency: opts.Concurrency, Timeout: opts.Timeout}), nil
}

// readServingCA reads the certificates (not the keys) of eksa-metrics'
// serving CAs: apply's one in kube-system, or with tls.certificates:
// cert-manager the CA of every namespace that holds a serving certificate
// (what apply publishes as the bundle). nil when the spec does not use them
// or none exists yet (the rows that need one then fail and say so).
func readServingCA(ctx context.Context, workload *cluster.Cluster, r *render.Result) (*x509.CertPool, error) {
	served := templates.ServingSecrets(r.Config)
	if len(served) == 0 {
		return nil, nil
	}
	where := map[string]string{templates.SystemNS: templates.ServingCA} // namespace -> Secret
	if r.Config.CertManager {
		where = map[string]string{}
		for _, ns := range templates.IssuerNamespaces(served) {
			where[ns] = templates.IssuerCA
		}
	}
	var pool *x509.CertPool
	for ns, name := range where {
		var err error
		if pool, err = readCA(ctx, workload, ns, name, pool); err != nil {
			return nil, err
		}
	}
	return pool, nil
}

// readCA adds the certificate (never the key) of a CA's Secret to pool (a
// new one when nil); pool as it was when the Secret does not exist.
func readCA(ctx context.Context, workload *cluster.Cluster, ns, name string, pool *x509.CertPool) (*x509.CertPool, error) {
	s, err := workload.Core.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return pool, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the CA, Secret %s/%s, in the %s: %w", ns, name, workload, err)
	}
	if pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(s.Data[corev1.TLSCertKey]) {
		return nil, fmt.Errorf("Secret %s/%s in the %s holds no PEM certificate in %s", ns, name, workload, corev1.TLSCertKey)
	}
	return pool, nil
}

// managementTargets lists the ready endpoints of each management
// controller's metrics Service, one target per pod.
func managementTargets(ctx context.Context, mgmt *cluster.Cluster, r *render.Result, notInstalled func(string)) ([]verify.Target, error) {
	var out []verify.Target
	for _, m := range templates.ManagementComponents(r.Config) {
		if _, err := mgmt.Core.AppsV1().Deployments(m.Namespace).Get(ctx, m.Deployment, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			if notInstalled != nil {
				notInstalled(m.ID())
			}
			continue
		} else if err != nil {
			return nil, fmt.Errorf("reading Deployment %s in the %s: %w", m.ID(), mgmt, err)
		}
		svc := m.Deployment + "-metrics"
		eps, err := readyEndpoints(ctx, mgmt, m.Namespace, svc)
		if err != nil {
			return nil, err
		}
		var found []verify.Target
		for _, ep := range eps {
			t := verify.ManagementTarget(m.Deployment, ep.pod, ep.address, "")
			if templates.ServesOurCertificate(r.Config, m) {
				t.ServingName = templates.ManagementServingName(m)
			}
			found = append(found, t)
		}
		if len(found) == 0 {
			found = append(found, verify.ManagementTarget(m.Deployment, "", "", fmt.Sprintf(
				"Service %s/%s has no ready endpoint: no ready pod of Deployment %s carries %s (is the Service applied, and are the pods ready?)", m.Namespace, svc, m.ID(), labels.SelectorFromSet(m.PodLabels))))
		}
		sort.Slice(found, func(i, j int) bool { return found[i].Node < found[j].Node })
		out = append(out, found...)
	}
	return out, nil
}

// endpoint is a ready pod behind a Service.
type endpoint struct{ pod, address string }

// readyEndpoints are the ready endpoints of a Service, from its
// EndpointSlices: the pod's name (else its address) and address.
func readyEndpoints(ctx context.Context, cl *cluster.Cluster, ns, svc string) ([]endpoint, error) {
	eps, err := cl.Core.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc})
	if err != nil {
		return nil, fmt.Errorf("listing the endpoints of Service %s/%s in the %s: %w", ns, svc, cl, err)
	}
	var out []endpoint
	for _, sl := range eps.Items {
		for _, ep := range sl.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready || len(ep.Addresses) == 0 {
				continue
			}
			e := endpoint{pod: ep.Addresses[0], address: ep.Addresses[0]}
			if ep.TargetRef != nil {
				e.pod = ep.TargetRef.Name
			}
			out = append(out, e)
		}
	}
	return out, nil
}

// approverTargets are the pods of the kubelet serving-certificate
// approver behind its metrics Service in the workload cluster.
func approverTargets(ctx context.Context, workload *cluster.Cluster) ([]verify.Target, error) {
	eps, err := readyEndpoints(ctx, workload, templates.SystemNS, templates.KubeletApprover)
	if err != nil {
		return nil, err
	}
	var out []verify.Target
	for _, ep := range eps {
		out = append(out, verify.ApproverTarget(ep.pod, ep.address, ""))
	}
	if len(out) == 0 {
		out = append(out, verify.ApproverTarget("", "", fmt.Sprintf(
			"Service %s/%s has no ready endpoint: no ready pod of Deployment %s/%s (is it applied, and does its pod run on a control-plane node?)", templates.SystemNS, templates.KubeletApprover, templates.SystemNS, templates.KubeletApprover)))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out, nil
}
