package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/eksa-metrics/eksa-metrics/internal/cli"
	"github.com/eksa-metrics/eksa-metrics/pkg/kubeletcsr"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
	"github.com/eksa-metrics/eksa-metrics/test/framework"
)

// With tls.kubeletServingCertificates the controller runs the kubelet
// approver in a workload cluster, from its own image (--eksa-metrics-image),
// once the Cluster's kubeletConfiguration has serverTLSBootstrap: true,
// which the controller never writes: before that, the Cluster's condition
// says what to set. A tenant may not ask for it.
func TestControllerRunsTheKubeletApprover(t *testing.T) {
	ctx := context.Background()
	const image = "registry.example.com/eksa-metrics:v0.0.0-it"
	f := newFleet(t, "w1")
	f.startControllerWith(t, &counter{reqs: map[string]int{}}, func(o *cli.ControllerOptions) { o.EKSAMetricsImage = image })
	// The signer flags roll the control plane: allowed here.
	f.putMetricsConfig(t, "default", "kubelets", map[string]any{"clusterRef": map[string]any{"kind": "Cluster", "name": "w1"},
		"scrapers": []any{map[string]any{"kind": "Group", "name": "metrics-readers"}},
		"tls":      map[string]any{"kubeletServingCertificates": true}, "allowControlPlaneRollout": true})
	f.clusterCondition(t, "default", "kubelets", "w1", "Rendered", "Invalid", "set serverTLSBootstrap: true in the Cluster's kubeletConfiguration")
	if _, err := f.workloads["w1"].Client.AppsV1().Deployments(templates.SystemNS).Get(ctx, templates.KubeletApprover, metav1.GetOptions{}); err == nil {
		t.Fatal("the approver runs although the kubelets would never ask it for anything")
	}

	// w1's Machine, and another Cluster's, in the management cluster.
	framework.SetMachine(t, f.mgmt.Dynamic, "w1", "w1-cp-1", "w1-cp", [2]string{"InternalIP", "198.51.100.31"}, [2]string{"Hostname", "w1-cp"})
	framework.SetMachine(t, f.mgmt.Dynamic, "w2", "w2-cp-1", "w2-cp", [2]string{"InternalIP", "198.51.100.41"})
	patch := []byte(`{"spec":{"controlPlaneConfiguration":{"kubeletConfiguration":{"kind":"KubeletConfiguration","serverTLSBootstrap":true}}}}`)
	if _, err := f.mgmt.Dynamic.Resource(eksaClusterGVR).Namespace("default").Patch(ctx, "w1", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitFor(t, "the approver in w1, from the controller's image, with its role", func() error {
		w := f.workloads["w1"].Client
		d, err := w.AppsV1().Deployments(templates.SystemNS).Get(ctx, templates.KubeletApprover, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got := d.Spec.Template.Spec.Containers[0].Image; got != image {
			return fmt.Errorf("image %s, want %s", got, image)
		}
		if args := d.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--machines-configmap="+templates.SystemNS+"/"+templates.KubeletMachines) {
			return fmt.Errorf("the approver reads no published Machines: %v", args)
		}
		role, err := w.RbacV1().ClusterRoles().Get(ctx, templates.KubeletApprover, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(role.Rules) != len(templates.KubeletApproverRules()) {
			return fmt.Errorf("role %v", role.Rules)
		}
		// The CA it signs with, which the controller made there.
		if _, err := w.CoreV1().Secrets(templates.SystemNS).Get(ctx, templates.KubeletServingCA, metav1.GetOptions{}); err != nil {
			return err
		}
		return nil
	})
	// The Machines the approver approves from: w1's only, following a
	// change the provider writes.
	machines := func(want string) {
		t.Helper()
		f.waitFor(t, "the Machines published to w1: "+want, func() error {
			cm, err := f.workloads["w1"].Client.CoreV1().ConfigMaps(templates.SystemNS).Get(ctx, templates.KubeletMachines, metav1.GetOptions{})
			if err != nil {
				return err
			}
			got := cm.Data[templates.KubeletMachinesKey]
			if !strings.Contains(got, want) || strings.Contains(got, "w2-cp") {
				return fmt.Errorf("published %s", got)
			}
			return nil
		})
	}
	machines(`"node":"w1-cp","created":`)
	machines(`{"type":"InternalIP","address":"198.51.100.31"}`)
	framework.SetMachine(t, f.mgmt.Dynamic, "w1", "w1-cp-1", "w1-cp", [2]string{"InternalIP", "198.51.100.32"})
	machines(`{"type":"InternalIP","address":"198.51.100.32"}`)
	// The approver's own identity in w1 reads them (by name, as its
	// informer lists and watches) and no other ConfigMap of kube-system.
	cfg := rest.CopyConfig(f.workloads["w1"].Admin)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + templates.SystemNS + ":" + templates.KubeletApprover,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + templates.SystemNS, "system:authenticated"}}
	approver := kubernetes.NewForConfigOrDie(cfg)
	src := &kubeletcsr.PublishedMachines{Client: approver, Namespace: templates.SystemNS, Name: templates.KubeletMachines, Key: templates.KubeletMachinesKey}
	watchCtx, stop := context.WithCancel(ctx)
	defer stop()
	current, synced, err := src.Watch(watchCtx, func() {})
	if err != nil {
		t.Fatal(err)
	}
	f.waitFor(t, "the approver's watch of its Machines", func() error {
		if !synced() {
			return fmt.Errorf("not synced")
		}
		ms, err := current()
		if err != nil {
			return err
		}
		if len(ms) != 1 || ms[0].Node != "w1-cp" || len(ms[0].Addresses) != 1 || ms[0].Addresses[0].Address != "198.51.100.32" {
			return fmt.Errorf("the approver sees %+v", ms)
		}
		return nil
	})
	if _, err := approver.CoreV1().ConfigMaps(templates.SystemNS).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the approver lists every ConfigMap of %s: %v", templates.SystemNS, err)
	}

	// A tenant's MetricsConfig may not have it.
	f.eksaCluster(t, "team-a", "t1", "mgmt", nil)
	f.putMetricsConfig(t, "team-a", "tenant", map[string]any{"clusterRef": map[string]any{"kind": "Cluster", "name": "t1"},
		"scrapers": []any{map[string]any{"kind": "ServiceAccount", "name": "prometheus", "namespace": "monitoring"}},
		"tls":      map[string]any{"kubeletServingCertificates": true}})
	f.clusterCondition(t, "team-a", "tenant", "t1", "Rendered", "NotAllowed", "spec.tls.kubeletServingCertificates")
}
