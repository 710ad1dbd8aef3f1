package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/eksa-metrics/eksa-metrics/pkg/kubeadm"
)

// ClusterOptions configure StartCluster.
type ClusterOptions struct {
	// Version of the binaries (bin/k8s/<version>/).
	Version string
	// Workers is the number of worker nodes besides the control-plane node.
	Workers int
	// The rendered extraArgs of each control-plane component, applied over
	// kubeadm's defaults as a KubeadmControlPlane would.
	EtcdArgs, APIServerArgs, ControllerManagerArgs, SchedulerArgs kubeadm.Args
	// KubeProxyConfig is kube-proxy's config.conf (default: kubeadm's, with
	// metricsBindAddress 127.0.0.1:10249).
	KubeProxyConfig string
	// FeatureGates of the kubelets and kube-proxies (z-pages on 1.33 to 1.35).
	FeatureGates string
	// ControlPlaneTaints are the control-plane node's taints
	// (key=value:Effect), which replace kubeadm's default as an EKS-A
	// spec's controlPlaneConfiguration.taints do; nil: kubeadm's
	// node-role.kubernetes.io/control-plane:NoSchedule.
	ControlPlaneTaints []string
	// KubeletServerTLSBootstrap runs the kubelets with serverTLSBootstrap:
	// true, as tls.kubeletServingCertificates renders into the Cluster's
	// kubeletConfiguration: each files a kubernetes.io/kubelet-serving
	// CertificateSigningRequest and serves no certificate until one is
	// approved (kube-controller-manager signs it with the cluster CA).
	KubeletServerTLSBootstrap bool
}

// Node is a node of the cluster: a simulated host running the real kubelet
// and kube-proxy servers (the hollow node).
type Node struct {
	Name         string
	Host         *Host
	ControlPlane bool
	Kubelet      *Process
	Proxy        *Process
}

// Cluster is a kubeadm-style cluster on simulated hosts: etcd, the API
// server, kube-controller-manager and kube-scheduler on the control-plane
// node (as static pods, whose mirror pods the kubelet creates), a kubelet and
// a kube-proxy on every node. Pods that the scheduler places on a node are
// run by the kubelet's fake runtime; a test starts the processes of the pods
// it cares about with RunPods.
type Cluster struct {
	*ControlPlane
	Options   ClusterOptions
	Nodes     []*Node
	KCM       *Process
	Scheduler *Process
	// Kubeconfigs of the components as kubeadm writes them.
	ControllerManagerKubeconfig, SchedulerKubeconfig string
	manifests                                        string
}

// KubeadmKubeProxyConfig is the config.conf kubeadm stores in the kube-proxy
// ConfigMap (the fields that matter here).
const KubeadmKubeProxyConfig = `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
bindAddress: 0.0.0.0
clusterCIDR: 192.168.0.0/16
metricsBindAddress: ""
mode: iptables
`

// StartCluster starts a control-plane node and opts.Workers workers and
// waits until every node is Ready.
func StartCluster(t testing.TB, opts ClusterOptions) *Cluster {
	t.Helper()
	cpHost := NewHost(t, "cp-1")
	c := &Cluster{Options: opts}
	c.ControlPlane = StartControlPlane(t, ControlPlaneOptions{Version: opts.Version, Host: cpHost, EtcdArgs: opts.EtcdArgs, APIServerArgs: opts.APIServerArgs})
	c.Nodes = append(c.Nodes, &Node{Name: "cp-1", Host: cpHost, ControlPlane: true})
	for i := 1; i <= opts.Workers; i++ {
		name := fmt.Sprintf("worker-%d", i)
		c.Nodes = append(c.Nodes, &Node{Name: name, Host: NewHost(t, name)})
	}
	c.bootstrap(t)
	c.startControllers(t)
	c.manifests = t.TempDir()
	c.writeStaticPods(t)
	for _, n := range c.Nodes {
		c.startKubelet(t, n)
	}
	c.WaitNodesReady(t)
	for _, n := range c.Nodes {
		c.StartKubeProxy(t, n, c.kubeProxyConfig(t))
	}
	return c
}

func (c *Cluster) bin(t testing.TB, name string) string {
	return Binary(t, filepath.Join("k8s", c.Version, name))
}

// bootstrap creates what kubeadm creates besides the static pods: kube-proxy's
// ServiceAccount, binding, ConfigMap and DaemonSet.
func (c *Cluster) bootstrap(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	conf := c.Options.KubeProxyConfig
	if conf == "" {
		conf = KubeadmKubeProxyConfig
	}
	objs := []any{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy", Namespace: "kube-system"}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "kubeadm:node-proxier"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:node-proxier"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "kube-proxy", Namespace: "kube-system"}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy", Namespace: "kube-system", Labels: map[string]string{"app": "kube-proxy"}},
			Data: map[string]string{"config.conf": conf, "kubeconfig.conf": "# in-cluster\n"}},
		kubeProxyDaemonSet(c.Version),
	}
	for _, o := range objs {
		var err error
		switch x := o.(type) {
		case *corev1.ServiceAccount:
			_, err = c.Client.CoreV1().ServiceAccounts(x.Namespace).Create(ctx, x, metav1.CreateOptions{})
		case *rbacv1.ClusterRoleBinding:
			_, err = c.Client.RbacV1().ClusterRoleBindings().Create(ctx, x, metav1.CreateOptions{})
		case *corev1.ConfigMap:
			_, err = c.Client.CoreV1().ConfigMaps(x.Namespace).Create(ctx, x, metav1.CreateOptions{})
		case *appsv1.DaemonSet:
			_, err = c.Client.AppsV1().DaemonSets(x.Namespace).Create(ctx, x, metav1.CreateOptions{})
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("bootstrap: %v", err)
		}
	}
}

// kubeProxyDaemonSet is kube-proxy as kubeadm deploys it.
func kubeProxyDaemonSet(version string) *appsv1.DaemonSet {
	sel := map[string]string{"k8s-app": "kube-proxy"}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy", Namespace: "kube-system", Labels: sel},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec: corev1.PodSpec{
					ServiceAccountName: "kube-proxy",
					HostNetwork:        true,
					PriorityClassName:  "system-node-critical",
					Tolerations:        []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					NodeSelector:       map[string]string{"kubernetes.io/os": "linux"},
					Containers: []corev1.Container{{
						Name:    "kube-proxy",
						Image:   "registry.k8s.io/kube-proxy:" + version,
						Command: []string{"/usr/local/bin/kube-proxy", "--config=/var/lib/kube-proxy/config.conf", "--hostname-override=$(NODE_NAME)"},
					}},
				},
			},
		},
	}
}

// startControllers starts kube-controller-manager and kube-scheduler on the
// control-plane node with kubeadm's flags and the rendered extraArgs.
func (c *Cluster) startControllers(t testing.TB) {
	t.Helper()
	c.ControllerManagerKubeconfig = c.Kubeconfig(t, "controller-manager", "system:kube-controller-manager")
	c.SchedulerKubeconfig = c.Kubeconfig(t, "scheduler", "system:kube-scheduler")
	paths := map[string]string{kubeadm.ControllerManagerKubeconfig: c.ControllerManagerKubeconfig, kubeadm.SchedulerKubeconfig: c.SchedulerKubeconfig,
		kubeadm.PKIDir + "/ca.crt": c.PKI.CACert, kubeadm.PKIDir + "/ca.key": c.PKI.CAKey}
	h := c.Nodes[0].Host
	c.KCM = h.Start(t, "kube-controller-manager", c.bin(t, "kube-controller-manager"), Args(Override(
		append(c.KubeadmControllerManagerArgs(c.ControllerManagerKubeconfig), kubeadm.Arg{Name: "node-monitor-grace-period", Value: "40s"}),
		NodePaths(c.Options.ControllerManagerArgs, paths))))
	c.Scheduler = h.Start(t, "kube-scheduler", c.bin(t, "kube-scheduler"), Args(Override(
		KubeadmSchedulerArgs(c.SchedulerKubeconfig), NodePaths(c.Options.SchedulerArgs, paths))))
}

// KubeadmControllerManagerArgs are the flags kubeadm writes into
// kube-controller-manager's static pod manifest, with the test bed's files.
func (cp *ControlPlane) KubeadmControllerManagerArgs(kubeconfig string) kubeadm.Args {
	return kubeadm.Args{
		{Name: "bind-address", Value: "127.0.0.1"},
		{Name: "leader-elect", Value: "true"},
		{Name: "kubeconfig", Value: kubeconfig},
		{Name: "authentication-kubeconfig", Value: kubeconfig},
		{Name: "authorization-kubeconfig", Value: kubeconfig},
		{Name: "client-ca-file", Value: cp.PKI.CACert},
		{Name: "requestheader-client-ca-file", Value: cp.PKI.CACert},
		{Name: "root-ca-file", Value: cp.PKI.CACert},
		{Name: "service-account-private-key-file", Value: cp.PKI.ServiceAccountKey},
		{Name: "cluster-signing-cert-file", Value: cp.PKI.CACert},
		{Name: "cluster-signing-key-file", Value: cp.PKI.CAKey},
		{Name: "use-service-account-credentials", Value: "true"},
		{Name: "controllers", Value: "*,bootstrapsigner,tokencleaner"},
	}
}

// KubeadmSchedulerArgs are the flags kubeadm writes into kube-scheduler's
// static pod manifest.
func KubeadmSchedulerArgs(kubeconfig string) kubeadm.Args {
	return kubeadm.Args{
		{Name: "bind-address", Value: "127.0.0.1"},
		{Name: "leader-elect", Value: "true"},
		{Name: "kubeconfig", Value: kubeconfig},
		{Name: "authentication-kubeconfig", Value: kubeconfig},
		{Name: "authorization-kubeconfig", Value: kubeconfig},
	}
}

// NodePaths replaces the node's kubeconfig paths (as the containers see them)
// with the test bed's.
func NodePaths(args kubeadm.Args, paths map[string]string) kubeadm.Args {
	out := make(kubeadm.Args, len(args))
	for i, a := range args {
		if p, ok := paths[a.Value]; ok {
			a.Value = p
		}
		out[i] = a
	}
	return out
}

// writeStaticPods writes the control-plane static pod manifests kubeadm
// writes (what matters to Prometheus and the Services: their labels, host
// network, and the arguments they run with), for the control-plane node's
// kubelet to create their mirror pods.
func (c *Cluster) writeStaticPods(t testing.TB) {
	t.Helper()
	for _, comp := range []struct {
		name string
		proc *Process
	}{{"etcd", c.Etcd}, {"kube-apiserver", c.APIServer}, {"kube-controller-manager", c.KCM}, {"kube-scheduler", c.Scheduler}} {
		pod := corev1.Pod{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Name: comp.name, Namespace: "kube-system", Labels: map[string]string{"component": comp.name, "tier": "control-plane"}},
			Spec: corev1.PodSpec{
				HostNetwork:       true,
				PriorityClassName: "system-node-critical",
				Containers:        []corev1.Container{{Name: comp.name, Image: "registry.k8s.io/" + comp.name + ":" + c.Version, Command: append([]string{comp.name}, comp.proc.Args...)}},
			},
		}
		b, err := yaml.Marshal(pod)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(c.manifests, comp.name+".yaml"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func (c *Cluster) startKubelet(t testing.TB, n *Node) { c.StartKubelet(t, n, "Webhook") }

// StartKubelet (re)starts a node's kubelet with an authorization mode:
// Webhook, as on EKS-A's nodes, or AlwaysAllow, a misconfigured node.
func (c *Cluster) StartKubelet(t testing.TB, n *Node, authorizationMode string) {
	t.Helper()
	if n.Kubelet != nil {
		n.Kubelet.Stop()
	}
	kubeconfig := c.Kubeconfig(t, "kubelet-"+n.Name, "system:node:"+n.Name, "system:nodes")
	args := []string{"--morph=kubelet", "--kubeconfig=" + kubeconfig, "--node-name=" + n.Name, "--node-ip=" + n.Host.IP,
		"--client-ca-file=" + c.PKI.CACert, "--v=0"}
	if n.ControlPlane {
		// The role label is set by kubeadm (NodeRestriction refuses it from the kubelet): WaitNodesReady.
		taints := c.Options.ControlPlaneTaints
		if taints == nil {
			taints = []string{"node-role.kubernetes.io/control-plane:NoSchedule"}
		}
		args = append(args, "--register-with-taints="+strings.Join(taints, ","), "--pod-manifest-path="+c.manifests)
	}
	if c.Options.FeatureGates != "" {
		args = append(args, "--feature-gates="+c.Options.FeatureGates)
	}
	if c.Options.KubeletServerTLSBootstrap {
		args = append(args, "--server-tls-bootstrap")
	}
	args = append(args, "--authorization-mode="+authorizationMode)
	n.Kubelet = n.Host.Start(t, "kubelet@"+n.Name, c.bin(t, "hollow-node"), args)
}

// StartKubeProxy (re)starts a node's kube-proxy with a config.conf.
func (c *Cluster) StartKubeProxy(t testing.TB, n *Node, config string) {
	t.Helper()
	if n.Proxy != nil {
		n.Proxy.Stop()
	}
	path := filepath.Join(t.TempDir(), "config.conf")
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	kubeconfig := c.Kubeconfig(t, "kube-proxy-"+n.Name, "system:kube-proxy")
	args := []string{"--morph=proxy", "--kubeconfig=" + kubeconfig, "--node-name=" + n.Name, "--config=" + path, "--metrics-bind-address=127.0.0.1:10249"}
	if c.Options.FeatureGates != "" {
		args = append(args, "--feature-gates="+c.Options.FeatureGates)
	}
	n.Proxy = n.Host.Start(t, "kube-proxy@"+n.Name, c.bin(t, "hollow-node"), args)
}

// kubeProxyConfig reads config.conf from the kube-proxy ConfigMap.
func (c *Cluster) kubeProxyConfig(t testing.TB) string {
	t.Helper()
	cm, err := c.Client.CoreV1().ConfigMaps("kube-system").Get(context.Background(), "kube-proxy", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm.Data["config.conf"]
}

// WaitNodesReady waits until every node is registered and Ready.
func (c *Cluster) WaitNodesReady(t testing.TB) {
	t.Helper()
	var procs []*Process
	for _, n := range c.Nodes {
		procs = append(procs, n.Kubelet)
	}
	WaitFor(t, "every node Ready", 120*time.Second, func() (bool, error) {
		nodes, err := c.Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		ready := 0
		for _, n := range nodes.Items {
			for _, cond := range n.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready == len(c.Nodes), fmt.Errorf("%d of %d nodes Ready", ready, len(c.Nodes))
	}, procs...)
	for _, n := range c.Nodes {
		if !n.ControlPlane {
			continue
		}
		patch := []byte(`{"metadata":{"labels":{"node-role.kubernetes.io/control-plane":"","node.kubernetes.io/exclude-from-external-load-balancers":""}}}`)
		if _, err := c.Client.CoreV1().Nodes().Patch(context.Background(), n.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatalf("labelling node %s as kubeadm does: %v", n.Name, err)
		}
	}
}

// NodeOf returns the node of a name.
func (c *Cluster) NodeOf(t testing.TB, name string) *Node {
	t.Helper()
	for _, n := range c.Nodes {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("no node %s", name)
	return nil
}

// RunningPods waits until want pods match selector in namespace and the
// kubelets report them Running, and returns them.
func (c *Cluster) RunningPods(t testing.TB, namespace, selector string, want int) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	sel, err := labels.Parse(selector)
	if err != nil {
		t.Fatal(err)
	}
	WaitFor(t, fmt.Sprintf("%d running pods %s in %s", want, selector, namespace), 120*time.Second, func() (bool, error) {
		list, err := c.Client.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{LabelSelector: sel.String()})
		if err != nil {
			return false, err
		}
		pods = pods[:0]
		for _, p := range list.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				pods = append(pods, p)
			}
		}
		return len(pods) == want, fmt.Errorf("%d of %d running", len(pods), want)
	})
	return pods
}

// Images maps a container image's repository (the part before the tag) to
// the binary that stands for it.
type Images map[string]string

// RunPods starts, on their nodes, the containers of running pods: each with
// its command and arguments, its environment (values, and status.hostIP,
// status.podIP, spec.nodeName, metadata.namespace and metadata.name
// fields), its ConfigMap volumes and, when its pod has a token volume or
// automounts one, the pod's ServiceAccount token and the cluster CA at
// /var/run/secrets/kubernetes.io/serviceaccount, with the in-cluster API
// address in KUBERNETES_SERVICE_HOST/PORT: as a container runtime would run
// them, with the binaries of images.
func (c *Cluster) RunPods(t testing.TB, pods []corev1.Pod, images Images) []*Process {
	t.Helper()
	var procs []*Process
	for _, p := range pods {
		node := c.NodeOf(t, p.Spec.NodeName)
		files := c.podFiles(t, p)
		for _, ct := range p.Spec.Containers {
			repo, _, _ := strings.Cut(ct.Image, ":")
			repo, _, _ = strings.Cut(repo, "@")
			bin, ok := images[repo]
			if !ok {
				t.Fatalf("no binary stands for image %s of pod %s/%s", ct.Image, p.Namespace, p.Name)
			}
			env := []string{"KUBERNETES_SERVICE_HOST=" + c.Host.IP, "KUBERNETES_SERVICE_PORT=6443"}
			vars := map[string]string{}
			for _, e := range ct.Env {
				v := e.Value
				if f := e.ValueFrom; f != nil && f.FieldRef != nil {
					v = map[string]string{"status.hostIP": p.Status.HostIP, "status.podIP": p.Status.PodIP, "spec.nodeName": p.Spec.NodeName,
						"metadata.namespace": p.Namespace, "metadata.name": p.Name}[f.FieldRef.FieldPath]
				}
				vars[e.Name] = v
				env = append(env, e.Name+"="+v)
			}
			argv := append(append([]string{}, ct.Command...), ct.Args...)
			for i := range argv {
				for k, v := range vars {
					argv[i] = strings.ReplaceAll(argv[i], "$("+k+")", v)
				}
			}
			if len(ct.Command) > 0 {
				argv = argv[1:] // the image's binary stands for the command
			}
			mounted := map[string]string{}
			for name, src := range files["automount"] {
				mounted[saDir+"/"+name] = src
			}
			for _, m := range ct.VolumeMounts {
				for name, src := range files[m.Name] {
					mounted[m.MountPath+"/"+name] = src
				}
			}
			procs = append(procs, node.Host.StartInPod(t, ct.Name+"@"+node.Name, bin, argv, mounted, env...))
		}
	}
	return procs
}

const saDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// podFiles writes the files of a pod's ConfigMap and token volumes, by
// volume name and file name.
func (c *Cluster) podFiles(t testing.TB, p corev1.Pod) map[string]map[string]string {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	out := map[string]map[string]string{}
	sa := p.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	write := func(vol, name, content string) {
		path := filepath.Join(dir, vol, name)
		_ = os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if out[vol] == nil {
			out[vol] = map[string]string{}
		}
		out[vol][name] = path
	}
	for _, v := range p.Spec.Volumes {
		switch {
		case v.ConfigMap != nil:
			cm, err := c.Client.CoreV1().ConfigMaps(p.Namespace).Get(ctx, v.ConfigMap.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for k, val := range cm.Data {
				write(v.Name, k, val)
			}
		case v.Secret != nil:
			s, err := c.Client.CoreV1().Secrets(p.Namespace).Get(ctx, v.Secret.SecretName, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("Secret volume %s of pod %s/%s: %v (a kubelet would keep the pod waiting)", v.Name, p.Namespace, p.Name, err)
			}
			if len(v.Secret.Items) == 0 {
				for k, val := range s.Data {
					write(v.Name, k, string(val))
				}
			}
			for _, it := range v.Secret.Items {
				write(v.Name, it.Path, string(s.Data[it.Key]))
			}
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				switch {
				case s.ServiceAccountToken != nil:
					write(v.Name, s.ServiceAccountToken.Path, c.Token(t, p.Namespace, sa))
				case s.ConfigMap != nil && s.ConfigMap.Name == "kube-root-ca.crt":
					ca, err := os.ReadFile(c.PKI.CACert)
					if err != nil {
						t.Fatal(err)
					}
					write(v.Name, "ca.crt", string(ca))
				case s.DownwardAPI != nil:
					write(v.Name, "namespace", p.Namespace)
				}
			}
		}
	}
	if p.Spec.AutomountServiceAccountToken == nil || *p.Spec.AutomountServiceAccountToken {
		// The kubelet's own kube-api-access volume, mounted into every container.
		ca, _ := os.ReadFile(c.PKI.CACert)
		write("automount", "token", c.Token(t, p.Namespace, sa))
		write("automount", "ca.crt", string(ca))
		write("automount", "namespace", p.Namespace)
	}
	return out
}
