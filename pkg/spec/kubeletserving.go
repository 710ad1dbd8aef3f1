package spec

import (
	"bytes"
	"fmt"
	"net"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The reasons of the Approved and Denied conditions the kubelet
// serving-certificate approver (pkg/kubeletcsr) writes on a
// CertificateSigningRequest, and PLAN.md tells the reader to look for.
const (
	KubeletServingApproved = "EksaMetricsKubeletServing"
	KubeletServingRefused  = "EksaMetricsKubeletServingRefused"
)

// tls.kubeletServingCertificates: serverTLSBootstrap in the Cluster's
// kubeletConfiguration, which EKS Anywhere (v0.20 and later, all that
// eksa-metrics supports) renders into each node group's kubelet
// configuration and rolls out by replacing the group's machines.

// kubeletGroup is a node group with the kubeletConfiguration EKS-A gives its
// kubelets.
type kubeletGroup struct {
	name   string      // "control plane" or the worker node group's name
	path   *field.Path // of its kubeletConfiguration
	config map[string]any
	os     string // osFamily of its MachineConfig ("" for Docker)
}

func (in *Input) kubeletGroups() []kubeletGroup {
	cs := in.Cluster.Spec
	cp := cs.ControlPlaneConfiguration
	out := []kubeletGroup{{name: "control plane", path: field.NewPath("spec", "controlPlaneConfiguration", "kubeletConfiguration"),
		config: cp.KubeletConfiguration, os: in.machineOS(cp.MachineGroupRef)}}
	for i, w := range cs.WorkerNodeGroupConfigurations {
		out = append(out, kubeletGroup{name: "worker node group " + w.Name, path: field.NewPath("spec", "workerNodeGroupConfigurations").Index(i).Child("kubeletConfiguration"),
			config: w.KubeletConfiguration, os: in.machineOS(w.MachineGroupRef)})
	}
	return out
}

func (in *Input) machineOS(ref Ref) string {
	for _, mc := range in.MachineConfigs {
		if mc.Kind == ref.Kind && mc.Metadata.Name == ref.Name {
			return strings.ToLower(mc.Spec.OSFamily)
		}
	}
	return ""
}

// serverTLSBootstrap is the group's setting: nil when unset.
func (g kubeletGroup) serverTLSBootstrap() (value any, set bool) {
	v, ok := g.config["serverTLSBootstrap"]
	return v, ok
}

// kubeletBootstrapGroups names the node groups whose kubeletConfiguration
// lacks serverTLSBootstrap: true, which generate adds to cluster.yaml (and
// whose machines EKS Anywhere then replaces).
func (in *Input) kubeletBootstrapGroups() []string {
	var out []string
	for _, g := range in.kubeletGroups() {
		if v, _ := g.serverTLSBootstrap(); v != true {
			out = append(out, g.name)
		}
	}
	return out
}

// validateKubeletServing refuses tls.kubeletServingCertificates where EKS
// Anywhere would not give the kubelets serverTLSBootstrap, or would drop
// other settings of theirs with it (docs/components.md, "Verified TLS").
func validateKubeletServing(in *Input, c *Config, root *field.Path, mErrs, cErrs *field.ErrorList, warn func(Doc, *field.Path, string, ...any)) {
	p := root.Child("tls", "kubeletServingCertificates")
	refuse := func(why string) { *mErrs = append(*mErrs, field.Invalid(p, true, why)) }
	switch c.Provider {
	case ProviderSnow:
		refuse("EKS Anywhere's Snow provider does not apply kubeletConfiguration, so the kubelets would keep self-signed certificates; leave it off (the kubelet scrapes skip verification)")
		return
	case ProviderDocker:
		labelled := len(in.Cluster.Spec.ControlPlaneConfiguration.Labels) > 0
		for _, w := range in.Cluster.Spec.WorkerNodeGroupConfigurations {
			labelled = labelled || len(w.Labels) > 0
		}
		if labelled {
			refuse("on Docker, EKS Anywhere renders a kubeletConfiguration together with node labels into a kubeadm configuration that is not valid YAML (its template's kubeletExtraArgs block); remove the labels or leave this off")
			return
		}
	}
	switch {
	case c.Images.EKSAMetrics != "":
	case in.Resource:
		refuse("the controller runs without --eksa-metrics-image, so it has no image for the kubelet approver: install it with controller manifests, which passes its own --image")
	default:
		// At the line that asks for the approver: images.eksaMetrics is
		// not written, so it has no line of its own.
		refuse("needs images.eksaMetrics: the kubelet serving-certificate approver runs the eksa-metrics image, and this eksa-metrics is not a release build, so it has no published image: build one with make image, push it and name it in images.eksaMetrics")
	}
	// The approver refuses the Service ranges' addresses in a kubelet's
	// certificate: a range it cannot parse would be a range it cannot refuse.
	for i, b := range in.Cluster.Spec.ClusterNetwork.Services.CIDRBlocks {
		if _, _, err := net.ParseCIDR(b); err != nil {
			*cErrs = append(*cErrs, field.Invalid(field.NewPath("spec", "clusterNetwork", "services", "cidrBlocks").Index(i), b,
				"not a CIDR block, so the kubelet approver could not refuse its addresses in a kubelet's certificate (tls.kubeletServingCertificates)"))
		}
	}
	for _, g := range in.kubeletGroups() {
		if g.os == OSBottlerocket {
			refuse(fmt.Sprintf("the %s runs Bottlerocket, whose settings EKS Anywhere builds without serverTLSBootstrap (vSphere refuses the field, Tinkerbell ignores kubeletConfiguration), so its kubelets would keep self-signed certificates; leave this off", g.name))
			continue
		}
		v, set := g.serverTLSBootstrap()
		switch {
		case set && v != true:
			*cErrs = append(*cErrs, field.Invalid(g.path.Child("serverTLSBootstrap"), v,
				"tls.kubeletServingCertificates needs it true: set it to true, or turn the option off"))
		case !set && in.Resource:
			// The controller does not edit Clusters: the owner of the
			// Cluster object rolls its nodes.
			*cErrs = append(*cErrs, field.Required(g.path.Child("serverTLSBootstrap"), fmt.Sprintf(
				"the %s's kubelets would keep self-signed certificates: set serverTLSBootstrap: true in the Cluster's kubeletConfiguration (eksa-metrics generate writes it into cluster.yaml; EKS Anywhere then replaces the group's machines)", g.name)))
		}
	}
	if !c.Management && !in.Resource {
		refuse(fmt.Sprintf("Cluster %q is a workload cluster (managementCluster.name is %q): the kubelet approver approves a node's names only as its Cluster API Machine lists them, and those Machines are in the management cluster, which this cluster cannot read; have eksa-metrics controller in %s keep it (a MetricsConfig selecting this Cluster), which publishes the Machines' addresses to the approver",
			in.Cluster.Metadata.Name, in.Cluster.Spec.ManagementCluster.Name, in.Cluster.Spec.ManagementCluster.Name))
	}
	if !in.Resource {
		if groups := in.kubeletBootstrapGroups(); len(groups) > 0 {
			warn(DocMetrics, p, "cluster.yaml gets serverTLSBootstrap: true in the kubeletConfiguration of the %s, so the next eksctl anywhere upgrade cluster replaces every machine of them; until a node is replaced its kubelet scrape fails verification",
				joinAnd(groups))
		}
	}
}

// kubeletInsertions are the lines ClusterYAML adds so that every node group
// has serverTLSBootstrap: true (tls.kubeletServingCertificates): keyed by
// the line they go before (1-based).
func (f *File) kubeletInsertions(eol string) (map[int][]byte, error) {
	if f.Metrics.TLS.KubeletServingCertificates == nil || !*f.Metrics.TLS.KubeletServingCertificates {
		return nil, nil
	}
	in := &Input{Cluster: f.Cluster, MachineConfigs: f.MachineConfigs}
	if len(in.kubeletBootstrapGroups()) == 0 {
		return nil, nil
	}
	d := f.clusterDoc
	if isJSON(f.docText(d)) {
		return nil, fmt.Errorf("%s:%d: spec.metrics.tls.kubeletServingCertificates: cannot add serverTLSBootstrap: true to the kubeletConfiguration of a JSON Cluster document; add it yourself to the %s", f.Path, d.root.Line, joinAnd(in.kubeletBootstrapGroups()))
	}
	spec := mappingField(d.root, "spec")
	var groups []*yaml.Node
	var names []string
	if cp := mappingField(spec, "controlPlaneConfiguration"); cp != nil {
		groups, names = append(groups, cp), append(names, "spec.controlPlaneConfiguration")
	} else {
		return nil, fmt.Errorf("%s:%d: spec.controlPlaneConfiguration: tls.kubeletServingCertificates needs a block mapping here to add kubeletConfiguration to", f.Path, spec.Line)
	}
	if _, ws := valueNode(spec, "workerNodeGroupConfigurations"); ws != nil && ws.Kind == yaml.SequenceNode {
		for i, w := range ws.Content {
			groups, names = append(groups, w), append(names, fmt.Sprintf("spec.workerNodeGroupConfigurations[%d]", i))
		}
	}
	lines := bytes.SplitAfter(f.Raw, []byte("\n"))
	out := map[int][]byte{}
	for i, g := range groups {
		if g.Kind != yaml.MappingNode || g.Style&yaml.FlowStyle != 0 {
			return nil, fmt.Errorf("%s:%d: %s: cannot add kubeletConfiguration to a flow-style mapping {...}; write it in block style, or add serverTLSBootstrap: true yourself", f.Path, g.Line, names[i])
		}
		var text []string
		target := g
		if k, kc := valueNode(g, "kubeletConfiguration"); k != nil {
			if kc.Kind != yaml.MappingNode || kc.Style&yaml.FlowStyle != 0 {
				return nil, fmt.Errorf("%s:%d: %s.kubeletConfiguration: cannot add serverTLSBootstrap: true to it unless it is a block mapping; add it yourself", f.Path, kc.Line, names[i])
			}
			if _, v := valueNode(kc, "serverTLSBootstrap"); v != nil {
				continue // true (validate refuses anything else)
			}
			target, text = kc, []string{"serverTLSBootstrap: true"}
		} else {
			// EKS-A drops kubelet flags of its own once kubeletConfiguration
			// is set (its templates' `if not .kubeletConfiguration` blocks):
			// keep what they said.
			text = []string{"kubeletConfiguration:", "  kind: KubeletConfiguration", "  apiVersion: kubelet.config.k8s.io/v1beta1",
				"  serverTLSBootstrap: true", "  readOnlyPort: 0", "  authentication:", "    anonymous:", "      enabled: false"}
			if c := providerByDatacenterKind[f.Cluster.Spec.DatacenterRef.Kind]; c == ProviderNutanix || c == ProviderDocker {
				text = append(text, "  evictionHard:", `    nodefs.available: "0%"`, `    nodefs.inodesFree: "0%"`, `    imagefs.available: "0%"`)
			}
		}
		line, col, err := insertionPoint(target, lines)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %s: %w", f.Path, target.Line, names[i], err)
		}
		var b bytes.Buffer
		for _, t := range text {
			b.WriteString(strings.Repeat(" ", col-1) + t + eol)
		}
		out[line] = append(out[line], b.Bytes()...)
	}
	return out, nil
}

// insertionPoint is where a key can be added to a block mapping: before
// the line of its first key, or, when that line also opens a sequence item
// ("- name: md-0"), before its second key. col is the keys' column.
func insertionPoint(m *yaml.Node, lines [][]byte) (line, col int, err error) {
	if len(m.Content) < 2 {
		return 0, 0, fmt.Errorf("cannot add a key to an empty mapping; add serverTLSBootstrap: true yourself")
	}
	// Above the comment lines of the key, which stay with it.
	above := func(line, col int) (int, int) {
		indent := strings.Repeat(" ", col-1) + "#"
		for line > 1 && bytes.HasPrefix(lines[line-2], []byte(indent)) {
			line--
		}
		return line, col
	}
	first := m.Content[0]
	if strings.TrimSpace(string(lines[first.Line-1][:first.Column-1])) == "" {
		line, col = above(first.Line, first.Column)
		return line, col, nil
	}
	for i := 2; i < len(m.Content); i += 2 {
		k := m.Content[i]
		if k.Line > first.Line && strings.TrimSpace(string(lines[k.Line-1][:k.Column-1])) == "" {
			line, col = above(k.Line, k.Column)
			return line, col, nil
		}
	}
	return 0, 0, fmt.Errorf("cannot find a line of its own to add serverTLSBootstrap: true on; write the mapping one key per line")
}
