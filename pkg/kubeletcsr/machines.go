package kubeletcsr

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// MachineSource is where an approver reads the Cluster API Machines that
// vouch for its nodes' names and addresses.
type MachineSource interface {
	// List reads them once.
	List(ctx context.Context) ([]spec.Machine, error)
	// Watch watches them until ctx ends, calling changed on each change:
	// current gives them as last seen once synced says so.
	Watch(ctx context.Context, changed func()) (current func() ([]spec.Machine, error), synced cache.InformerSynced, err error)
	// String says where they are, for messages.
	String() string
}

// ClusterMachines are the Machines of one Cluster API Cluster (the label
// cluster.x-k8s.io/cluster-name) in one namespace, read where they live: a
// self-managed cluster's own, in eksa-system.
type ClusterMachines struct {
	Client    dynamic.Interface
	Resource  schema.GroupVersionResource
	Namespace string
	Cluster   string
}

func (s *ClusterMachines) String() string {
	return fmt.Sprintf("the %s of Cluster %s in %s", s.Resource.GroupResource(), s.Cluster, s.Namespace)
}

func (s *ClusterMachines) selector() string {
	return labels.SelectorFromSet(labels.Set{spec.MachineClusterLabel: s.Cluster}).String()
}

func (s *ClusterMachines) List(ctx context.Context) ([]spec.Machine, error) {
	list, err := s.Client.Resource(s.Resource).Namespace(s.Namespace).List(ctx, metav1.ListOptions{LabelSelector: s.selector()})
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", s, err)
	}
	return spec.MachinesOf(list.Items), nil
}

func (s *ClusterMachines) Watch(ctx context.Context, changed func()) (func() ([]spec.Machine, error), cache.InformerSynced, error) {
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(s.Client, 0, s.Namespace, func(o *metav1.ListOptions) { o.LabelSelector = s.selector() })
	inf := f.ForResource(s.Resource)
	// Each Machine is kept as the little the approver reads of it.
	if err := inf.Informer().SetTransform(transform(trimMachine)); err != nil {
		return nil, nil, err
	}
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) { changed() }, DeleteFunc: func(any) { changed() },
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*unstructured.Unstructured)
			n, ok2 := cur.(*unstructured.Unstructured)
			if !ok1 || !ok2 || !reflect.DeepEqual(spec.MachineOf(o.Object), spec.MachineOf(n.Object)) {
				changed()
			}
		}}); err != nil {
		return nil, nil, err
	}
	f.Start(ctx.Done())
	current := func() ([]spec.Machine, error) {
		objs, err := inf.Lister().List(labels.Everything())
		if err != nil {
			return nil, err
		}
		out := make([]spec.Machine, 0, len(objs))
		for _, o := range objs {
			if u, ok := o.(*unstructured.Unstructured); ok {
				out = append(out, spec.MachineOf(u.Object))
			}
		}
		return out, nil
	}
	return current, inf.Informer().HasSynced, nil
}

// trimMachine keeps of a Machine what spec.MachineOf reads.
func trimMachine(u *unstructured.Unstructured) *unstructured.Unstructured {
	m := spec.MachineOf(u.Object)
	out := &unstructured.Unstructured{Object: map[string]any{}}
	out.SetAPIVersion(u.GetAPIVersion())
	out.SetKind(u.GetKind())
	out.SetName(u.GetName())
	out.SetNamespace(u.GetNamespace())
	out.SetUID(u.GetUID())
	out.SetResourceVersion(u.GetResourceVersion())
	out.SetCreationTimestamp(u.GetCreationTimestamp())
	if m.Node != "" {
		_ = unstructured.SetNestedField(out.Object, m.Node, "status", "nodeRef", "name")
	}
	if len(m.Addresses) > 0 {
		addrs := make([]any, len(m.Addresses))
		for i, a := range m.Addresses {
			addrs[i] = map[string]any{"type": a.Type, "address": a.Address}
		}
		_ = unstructured.SetNestedSlice(out.Object, addrs, "status", "addresses")
	}
	return out
}

// MachineResource is the Machine resource the cluster serves: Cluster
// API's v1beta2 where served (Cluster API 1.11 and later), else v1beta1.
// The fields read (status.nodeRef.name, status.addresses) are the same in
// both.
func MachineResource(d discovery.DiscoveryInterface) (schema.GroupVersionResource, error) {
	for _, v := range []string{"v1beta2", "v1beta1"} {
		gv := "cluster.x-k8s.io/" + v
		list, err := d.ServerResourcesForGroupVersion(gv)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return schema.GroupVersionResource{}, fmt.Errorf("discovering %s: %w", gv, err)
		}
		for _, r := range list.APIResources {
			if r.Name == "machines" {
				return schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: v, Resource: "machines"}, nil
			}
		}
	}
	return schema.GroupVersionResource{}, fmt.Errorf("the cluster serves no Cluster API Machines (cluster.x-k8s.io v1beta2 or v1beta1): the approver approves a node's names only as its Machine lists them")
}

// PublishedMachines are the Machines the controller publishes in a
// ConfigMap of the workload cluster (templates.KubeletMachines: its Machines
// live in the management cluster, which the cluster cannot read). No
// ConfigMap is no Machine.
type PublishedMachines struct {
	Client          kubernetes.Interface
	Namespace, Name string
	// Key is the ConfigMap key holding the JSON list of spec.Machine.
	Key string
}

func (s *PublishedMachines) String() string {
	return fmt.Sprintf("the Machines published in ConfigMap %s/%s", s.Namespace, s.Name)
}

func (s *PublishedMachines) decode(cm *corev1.ConfigMap) ([]spec.Machine, error) {
	if cm == nil {
		return nil, nil
	}
	var out []spec.Machine
	if err := json.Unmarshal([]byte(cm.Data[s.Key]), &out); err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s key %s: %w", s.Namespace, s.Name, s.Key, err)
	}
	return out, nil
}

func (s *PublishedMachines) List(ctx context.Context) ([]spec.Machine, error) {
	cm, err := s.Client.CoreV1().ConfigMaps(s.Namespace).Get(ctx, s.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", s, err)
	}
	return s.decode(cm)
}

func (s *PublishedMachines) Watch(ctx context.Context, changed func()) (func() ([]spec.Machine, error), cache.InformerSynced, error) {
	// Listed and watched by name: the approver may read this one ConfigMap.
	f := informers.NewSharedInformerFactoryWithOptions(s.Client, 0, informers.WithNamespace(s.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", s.Name).String()
		}))
	inf := f.Core().V1().ConfigMaps()
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) { changed() }, DeleteFunc: func(any) { changed() },
		UpdateFunc: func(any, any) { changed() }}); err != nil {
		return nil, nil, err
	}
	f.Start(ctx.Done())
	current := func() ([]spec.Machine, error) {
		cm, err := inf.Lister().ConfigMaps(s.Namespace).Get(s.Name)
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return s.decode(cm)
	}
	return current, inf.Informer().HasSynced, nil
}

// vouched is what the Machines say: each node's Machine, and the Machine
// each name and address belongs to (the older of two Machines that list
// it: created first by the API server, the name breaking a tie).
type vouched struct {
	byNode map[string]*spec.Machine
	owner  map[string]string // dnsKey or IP string -> Machine name
}

func vouch(machines []spec.Machine) vouched {
	sorted := slices.Clone(machines)
	sort.SliceStable(sorted, func(i, j int) bool {
		a, b := created(sorted[i]), created(sorted[j])
		if !a.Equal(b) {
			return a.Before(b)
		}
		return sorted[i].Name < sorted[j].Name
	})
	v := vouched{byNode: map[string]*spec.Machine{}, owner: map[string]string{}}
	for i := range sorted {
		m := &sorted[i]
		if m.Node != "" {
			if _, ok := v.byNode[m.Node]; !ok {
				v.byNode[m.Node] = m
			}
		}
		dns, ips := machineAddresses(m)
		for _, ip := range ips {
			dns = append(dns, ip.String())
		}
		for _, a := range dns {
			if _, ok := v.owner[a]; !ok {
				v.owner[a] = m.Name
			}
		}
	}
	return v
}

// created is when a Machine was created (the zero time when unknown: such
// a Machine counts as the oldest, which only a Machine's writer can cause).
func created(m spec.Machine) time.Time {
	t, _ := time.Parse(time.RFC3339, m.Created)
	return t
}

// machineAddresses are the DNS names (its node's name first, in dnsKey
// form) and the IP addresses a Machine lists (Cluster API's MachineAddress
// types: Hostname, InternalDNS, ExternalDNS, InternalIP, ExternalIP).
func machineAddresses(m *spec.Machine) (dns []string, ips []net.IP) {
	if m.Node != "" {
		dns = append(dns, dnsKey(m.Node))
	}
	for _, a := range m.Addresses {
		switch a.Type {
		case "Hostname", "InternalDNS", "ExternalDNS":
			dns = append(dns, dnsKey(a.Address))
		case "InternalIP", "ExternalIP":
			if ip := net.ParseIP(strings.TrimSpace(a.Address)); ip != nil {
				ips = append(ips, ip)
			}
		}
	}
	return dns, ips
}
