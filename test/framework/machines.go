package framework

import (
	"context"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// MachineGVR is the Cluster API Machine resource the test bed serves
// (InstallMachines: the CRD's storage version).
var MachineGVR = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "machines"}

// InstallMachines installs Cluster API's real Machine CRD (bin/crds/
// cluster-api-core) and the namespace EKS Anywhere keeps them in.
func (cp *ControlPlane) InstallMachines(t testing.TB) {
	t.Helper()
	if err := phaseHas(filepath.Join("crds", "cluster-api-core")); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(BinDir(), "crds", "cluster-api-core", "cluster.x-k8s.io_machines.yaml")
	for _, crd := range ReadYAML(t, f) {
		cp.InstallStorageVersion(t, crd)
	}
	_, err := cp.Client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: spec.MachinesNamespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// SetMachine creates or updates Machine eksa-system/name of Cluster
// cluster, as Cluster API and the infrastructure provider write it: its
// status.nodeRef names node ("" for none yet) and status.addresses are
// addrs, pairs of type and address (InternalIP, Hostname...). client is
// whoever writes it (the admin in these tests).
func SetMachine(t testing.TB, client dynamic.Interface, cluster, name, node string, addrs ...[2]string) {
	t.Helper()
	ctx := context.Background()
	r := client.Resource(MachineGVR).Namespace(spec.MachinesNamespace)
	m, err := r.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		m = &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": MachineGVR.GroupVersion().String(), "kind": "Machine",
			"metadata": map[string]any{"name": name, "namespace": spec.MachinesNamespace, "labels": map[string]any{spec.MachineClusterLabel: cluster}},
			"spec": map[string]any{"clusterName": cluster, "bootstrap": map[string]any{"dataSecretName": name},
				"infrastructureRef": map[string]any{"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DockerMachine", "name": name}},
		}}
		if m, err = r.Create(ctx, m, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating Machine %s: %v", name, err)
		}
	}
	status := map[string]any{}
	if node != "" {
		status["nodeRef"] = map[string]any{"name": node}
	}
	var list []any
	for _, a := range addrs {
		list = append(list, map[string]any{"type": a[0], "address": a[1]})
	}
	if len(list) > 0 {
		status["addresses"] = list
	}
	m.Object["status"] = status
	if _, err := r.UpdateStatus(ctx, m, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("writing the status of Machine %s: %v", name, err)
	}
}
