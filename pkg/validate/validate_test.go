package validate

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eksa-metrics/eksa-metrics/internal/testutil"
	"github.com/eksa-metrics/eksa-metrics/pkg/cluster"
	"github.com/eksa-metrics/eksa-metrics/pkg/kubeadm"
	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
)

func example(name string) string {
	return filepath.Join(testutil.RepoRoot(), "examples", name+".yaml")
}

// input loads a spec the way the command does.
func input(t *testing.T, path string, opts spec.Options, edit func(string) string) *Input {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	if edit != nil {
		text = edit(text)
	}
	in := &Input{Path: filepath.Base(path)}
	in.File, in.LoadErr = spec.Load(in.Path, strings.NewReader(text))
	if in.LoadErr == nil {
		in.Result, in.RenderErr = render.RenderFile(in.File, opts)
	}
	return in
}

func result(t *testing.T, in *Input, name string) Result {
	t.Helper()
	for _, r := range Run(context.Background(), in, nil) {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no check %s", name)
	return Result{}
}

func replace(old, new string) func(string) string {
	return func(s string) string {
		if !strings.Contains(s, old) {
			panic("test edit does not apply: " + old)
		}
		return strings.Replace(s, old, new, 1)
	}
}

// Every check, passing and not passing.
func TestChecks(t *testing.T) {
	vsphere, docker, bottlerocket := example("vsphere-management"), example("docker-bindaddress"), example("bottlerocket-workload")
	injectItem := func(comp kubeadm.Component, name, value string) func(*Input) {
		return func(in *Input) {
			in.Result.Change.Items = append(in.Result.Change.Items, kubeadm.Item{Component: comp, Arg: kubeadm.Arg{Name: name, Value: value}})
		}
	}
	for _, tc := range []struct {
		name, check string
		path        string
		opts        spec.Options
		edit        func(string) string
		mutate      func(*Input)
		want        Status
		contains    string
	}{
		{name: "loads", check: "spec-loads", path: vsphere, want: Pass},
		{name: "unsupported version", check: "spec-loads", path: docker, edit: replace(`"1.34"`, `"1.27"`), want: Fail, contains: "spec.kubernetesVersion"},
		{name: "does not load", check: "spec-loads", path: vsphere, edit: replace("exposure: proxy", "exposure: sideways"), want: Fail, contains: "spec.exposure"},
		{name: "malformed", check: "spec-loads", path: vsphere, edit: replace("scrapers:", "scrapers: ["), want: Fail},
		{name: "document form", check: "eksa-spec-clean", path: vsphere, want: Pass},
		{name: "inline form", check: "eksa-spec-clean", path: bottlerocket, want: Warn, contains: "inline"},
		{name: "section left in", check: "eksa-spec-clean", path: vsphere, mutate: func(in *Input) { in.Result.ClusterYAML = in.File.Raw }, want: Fail},
		{name: "contract from eksaVersion", check: "capi-contract", path: vsphere, want: Pass},
		{name: "no eksaVersion", check: "capi-contract", path: vsphere, edit: replace("  eksaVersion: v0.26.1\n", ""), want: Warn},
		{name: "flag contradicts eksaVersion", check: "spec-loads", path: vsphere, opts: spec.Options{CAPIAPIVersion: spec.CAPIv1beta1}, want: Fail, contains: "--capi-api-version says v1beta1"},
		{name: "rendered for another contract", check: "capi-contract", path: vsphere,
			mutate: func(in *Input) { in.Result.Config.CAPIVersion = spec.CAPIv1beta1 }, want: Fail},
		{name: "known flags", check: "flags-exist", path: docker, want: Pass},
		{name: "unknown flag", check: "flags-exist", path: docker, mutate: injectItem(kubeadm.Scheduler, "secure-metrics", "true"), want: Fail, contains: "scheduler --secure-metrics"},
		{name: "gates fit", check: "feature-gates", path: docker, want: Pass},
		{name: "gate too new", check: "feature-gates", path: docker, mutate: func(in *Input) {
			in.Result.Config.KubeVersion.Minor = 32
		}, want: Fail, contains: "controllerManager: ComponentFlagz does not exist in 1.32"},
		{name: "gate left out next to EKS-A's", check: "feature-gates", path: bottlerocket, want: Warn, contains: "apiServer: ComponentStatusz"},
		{name: "unique names", check: "extra-args-unique", path: docker, want: Pass},
		{name: "name EKS-A renders", check: "extra-args-unique", path: docker, mutate: injectItem(kubeadm.ControllerManager, "profiling", "true"), want: Fail, contains: "--profiling"},
		{name: "stacked", check: "external-etcd", path: docker, want: Pass},
		{name: "external", check: "external-etcd", path: vsphere, edit: replace("  datacenterRef:", "  externalEtcdConfiguration: {count: 3}\n  datacenterRef:"), want: Warn, contains: "2379"},
		{name: "etcd args with external etcd", check: "external-etcd", path: vsphere, edit: replace("  datacenterRef:", "  externalEtcdConfiguration: {count: 3}\n  datacenterRef:"),
			mutate: injectItem(kubeadm.Etcd, "metrics", "extensive"), want: Fail},
		{name: "secure", check: "insecure-endpoints", path: vsphere, want: Pass},
		{name: "allowInsecure", check: "insecure-endpoints", path: docker, want: Warn},
		{name: "loopback", check: "cis-bind-address", path: vsphere, want: Pass},
		{name: "0.0.0.0", check: "cis-bind-address", path: docker, want: Warn, contains: "CIS"},
		{name: "no render warning", check: "render-warnings", path: vsphere, want: Pass},
		{name: "every render warning", check: "render-warnings", path: docker, want: Warn, contains: "docker-bindaddress.yaml:47: spec.allowInsecure"},
		{name: "a removed provider", check: "render-warnings", path: docker, edit: func(s string) string {
			return strings.ReplaceAll(strings.Replace(s, "  eksaVersion: v0.26.1\n", "", 1), "DockerDatacenterConfig", "CloudStackDatacenterConfig")
		}, want: Warn, contains: "spec.datacenterRef.kind: CloudStack was removed from EKS Anywhere"},
		{name: "--from does not load", check: "upgrade-diff", path: docker, mutate: func(in *Input) {
			in.OldPath, in.OldErr = "base/dev.yaml", &spec.InvalidError{Problems: []spec.Problem{{File: "base/dev.yaml", Detail: "no such file"}}}
		}, want: Fail, contains: "base/dev.yaml: no such file"},
		{name: "custom taints tolerated", check: "daemonsets-schedule", path: vsphere, edit: tainted, want: Pass, contains: "taints tolerated, control plane: 2, worker node group md-0: 1"},
		{name: "default taint tolerated", check: "daemonsets-schedule", path: vsphere, want: Pass, contains: "control plane: 1"},
		{name: "the tolerations of kubeadm's taints only", check: "daemonsets-schedule", path: vsphere, edit: tainted, mutate: podSpec(templates.ControlPlaneDS, func(p map[string]any) {
			p["tolerations"] = []any{map[string]any{"key": spec.ControlPlaneNodeLabel, "operator": "Exists", "effect": "NoSchedule"}}
		}), want: Fail, contains: "vsphere-management.yaml:28: spec.controlPlaneConfiguration.taints[1]: taint dedicated=infra:NoExecute is not tolerated"},
		{name: "a worker group's taint", check: "daemonsets-schedule", path: vsphere, edit: tainted, mutate: podSpec(templates.NodeDS, func(p map[string]any) { delete(p, "tolerations") }),
			want: Fail, contains: "on the worker node group md-0: vsphere-management.yaml:34: spec.workerNodeGroupConfigurations[0].taints[0]: taint gpu=true:NoSchedule"},
		{name: "a selector no control-plane node matches", check: "daemonsets-schedule", path: vsphere, mutate: podSpec(templates.ControlPlaneDS, func(p map[string]any) {
			p["nodeSelector"] = map[string]any{"node-role.kubernetes.io/master": ""}
		}), want: Fail, contains: "node selector node-role.kubernetes.io/master= matches none"},
		{name: "least privilege", check: "rbac-least-privilege", path: docker, want: Pass},
		{name: "wildcard", check: "rbac-least-privilege", path: docker, mutate: func(in *Input) {
			for _, o := range in.Result.Objects {
				if o.Kind() == "ClusterRole" {
					o.Object["rules"] = append(o.Object["rules"].([]any), map[string]any{"verbs": []any{"get"}, "resources": []any{"nodes/proxy"}, "apiGroups": []any{""}})
				}
			}
		}, want: Fail, contains: "nodes/proxy"},
		{name: "bound to everybody", check: "rbac-least-privilege", path: docker, mutate: func(in *Input) {
			for _, o := range in.Result.Objects {
				if o.Kind() == "ClusterRoleBinding" {
					o.Object["subjects"] = append(o.Object["subjects"].([]any), map[string]any{"kind": "Group", "name": "system:authenticated", "apiGroup": "rbac.authorization.k8s.io"})
				}
			}
		}, want: Fail, contains: "binds system:authenticated, which is every authenticated user"},
		{name: "a role it never needs", check: "rbac-least-privilege", path: docker, mutate: func(in *Input) {
			for _, o := range in.Result.Objects {
				if o.Kind() == "ClusterRoleBinding" {
					o.Object["roleRef"].(map[string]any)["name"] = "cluster-admin"
				}
			}
		}, want: Fail, contains: "grants role cluster-admin"},
	} {
		t.Run(tc.check+"/"+tc.name, func(t *testing.T) {
			in := input(t, tc.path, tc.opts, tc.edit)
			if tc.mutate != nil {
				tc.mutate(in)
			}
			r := result(t, in, tc.check)
			all := r.Message + " " + strings.Join(r.Details, " ")
			if r.Status != tc.want || !strings.Contains(all, tc.contains) {
				t.Fatalf("%s: %s %q %v (want %s containing %q)", tc.check, r.Status, r.Message, r.Details, tc.want, tc.contains)
			}
			if r.Status == Fail || r.Status == Warn {
				if r.Remediation == "" {
					t.Errorf("a %s result needs a remediation", r.Status)
				}
			}
		})
	}
}

// tainted gives the vSphere example's control plane the taints of EKS-A's
// vSphere reference template (they replace kubeadm's default) and a label,
// and its worker node group a taint.
var tainted = func(s string) string {
	s = replace("      name: mgmt-cp\n", "      name: mgmt-cp\n    taints:\n    - {key: dedicated, value: infra, effect: NoSchedule}\n    - {key: dedicated, value: infra, effect: NoExecute}\n    labels: {tier: infra}\n")(s)
	return replace("    count: 2\n", "    count: 2\n    taints:\n    - {key: gpu, value: \"true\", effect: NoSchedule}\n")(s)
}

// podSpec edits the pod template of a rendered DaemonSet.
func podSpec(ds string, edit func(map[string]any)) func(*Input) {
	return func(in *Input) {
		for _, o := range in.Result.Objects {
			if o.Kind() == "DaemonSet" && o.Name() == ds {
				edit(o.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any))
				return
			}
		}
		panic("no DaemonSet " + ds)
	}
}

// The upgrade diff over pairs of old and new specs, as in a pull request.
func TestUpgradeDiff(t *testing.T) {
	docker := example("docker-bindaddress")
	proxy := func(s string) string {
		return strings.Replace(strings.Replace(s, "exposure: bindAddress", "exposure: proxy", 1), "allowInsecure: true", "allowInsecure: false", 1)
	}
	for _, tc := range []struct {
		name     string
		old, new func(string) string
		want     Status
		contains []string
	}{
		{"no change", nil, nil, Pass, []string{"nothing apply writes changes"}},
		{"1.34 -> 1.35", nil, replace(`"1.34"`, `"1.35"`), Pass, []string{"run eksa-metrics apply again", "Kubernetes 1.34 -> 1.35"}},
		{"1.35 -> 1.36: the z-page gates go", replace(`"1.34"`, `"1.35"`), replace(`"1.34"`, `"1.36"`), Warn,
			[]string{"edit KubeadmControlPlane eksa-system/dev (management cluster)", "gives back apiServer --feature-gates=ComponentFlagz=true,ComponentStatusz=true", "every control-plane machine"}},
		// Only the form of the items changes (a map in v1beta1, a list in
		// v1beta2): nothing rolls, and the remediation does not say so.
		{"eksaVersion v0.24 -> v0.25", replace("v0.26.1", "v0.24.6"), replace("v0.26.1", "v0.25.0"), Pass,
			[]string{"KubeadmControlPlane v1beta1 -> v1beta2", "EKS Anywhere v0.24.6 -> v0.25.0", "the same extraArgs items, applied in the v1beta2 form (v1beta1 before): no machine is replaced"}},
		{"bindAddress -> proxy", nil, proxy, Warn,
			[]string{"create DaemonSet kube-system/eksa-metrics-control-plane-proxy (workload cluster)", "gives back controllerManager --bind-address=0.0.0.0",
				"edit ConfigMap kube-system/kube-proxy (workload cluster): eksa-metrics gives back the metricsBindAddress", "pods restart: DaemonSet kube-system/kube-proxy",
				"create Secret kube-system/eksa-metrics-serving-ca"}},
		{"proxy -> bindAddress", proxy, nil, Warn,
			[]string{"delete DaemonSet kube-system/eksa-metrics-control-plane-proxy (workload cluster)", "sets controllerManager --bind-address=0.0.0.0",
				"edit ConfigMap kube-system/kube-proxy (workload cluster): config.conf metricsBindAddress: 0.0.0.0:10249", "delete Secret kube-system/eksa-metrics-serving-ca"}},
		{"TLS 1.3 on the management components", nil, replace("allowInsecure: true", "allowInsecure: true\n  tls: {minVersion: VersionTLS13}"), Warn,
			[]string{"sets controllerManager --tls-min-version=VersionTLS13"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := input(t, docker, spec.Options{}, tc.new)
			old := input(t, docker, spec.Options{}, tc.old)
			if old.Result == nil || in.Result == nil {
				t.Fatalf("inputs do not render: %v %v %v %v", old.LoadErr, old.RenderErr, in.LoadErr, in.RenderErr)
			}
			in.Old, in.OldPath = old.Result, "base/"+old.Path
			r := result(t, in, "upgrade-diff")
			all := r.Message + "\n" + strings.Join(r.Details, "\n")
			if r.Status != tc.want {
				t.Errorf("status %s, want %s:\n%s", r.Status, tc.want, all)
			}
			for _, c := range tc.contains {
				if !strings.Contains(all, c) {
					t.Errorf("missing %q in:\n%s", c, all)
				}
			}
			if (r.Remediation != "") != (tc.want == Warn) {
				t.Errorf("remediation %q with status %s: the rollout advice belongs only to a change that rolls", r.Remediation, r.Status)
			}
			if len(r.Changes) != len(r.Details)-strings.Count(all, "after eksctl anywhere upgrade") {
				t.Errorf("%d structured changes for %d details", len(r.Changes), len(r.Details))
			}
		})
	}
}

func TestOnlineChecksAreSkippedOffline(t *testing.T) {
	for _, r := range Run(context.Background(), input(t, example("vsphere-management"), spec.Options{}, nil), map[string]bool{"cis-bind-address": true}) {
		for _, c := range Checks() {
			if c.Name == r.Name && (c.Kind == "online" || c.Kind == "upgrade" || c.Name == "cis-bind-address") && r.Status != Skipped {
				t.Errorf("%s: %s, want skipped", r.Name, r.Status)
			}
		}
	}
}

// A workload kubeconfig Secret refused for its plugins or files fails the
// online checks (invalid input, exit 3) with the way out; an unreachable
// cluster only keeps them from running.
func TestOnlineChecksWithARefusedKubeconfig(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want Status
		says string
	}{
		{&cluster.KubeconfigRefusedError{Source: "Secret eksa-system/prod-kubeconfig", Refused: []cluster.RefusedField{{Entry: `user "a"`, Field: "exec", Why: "it would run a command"}}},
			Fail, "--insecure-kubeconfig-secrets"},
		{&cluster.UnreachableError{Role: "management", Kubeconfig: "k", Err: errors.New("connection refused")}, Error, "check --kubeconfig"},
		// A missing or malformed kubeconfig is invalid input, not an
		// unreachable cluster.
		{&cluster.KubeconfigInvalidError{Role: "management", Kubeconfig: "/nope", From: "--kubeconfig", Err: errors.New("no such file")}, Fail, "--kubeconfig"},
	} {
		in := input(t, example("vsphere-management"), spec.Options{}, nil)
		in.OnlineErr = tc.err
		r := result(t, in, "drift")
		if r.Status != tc.want || !strings.Contains(r.Remediation, tc.says) || len(r.Details) != 1 || r.Details[0] != tc.err.Error() {
			t.Errorf("%T: %+v, want %s saying %q", tc.err, r, tc.want, tc.says)
		}
	}
}

// The JUnit output decodes as JUnit XML (testsuites > testsuite > testcase
// with failure/error/skipped children) with consistent counts.
func TestJUnit(t *testing.T) {
	results := []Result{
		{Name: "a", Status: Pass, Message: "ok"},
		{Name: "b", Status: Fail, Message: "broken <&>", Details: []string{"x"}, Remediation: "fix it"},
		{Name: "c", Status: Warn, Message: "hmm"},
		{Name: "d", Status: Skipped, Message: "offline"},
		{Name: "e", Status: Error, Message: "could not run"},
	}
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, "suite", results); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		XMLName  xml.Name `xml:"testsuites"`
		Tests    int      `xml:"tests,attr"`
		Failures int      `xml:"failures,attr"`
		Errors   int      `xml:"errors,attr"`
		Skipped  int      `xml:"skipped,attr"`
		Suites   []struct {
			Name  string `xml:"name,attr"`
			Tests int    `xml:"tests,attr"`
			Cases []struct {
				Name    string `xml:"name,attr"`
				Class   string `xml:"classname,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
					Text    string `xml:",chardata"`
				} `xml:"failure"`
				Error   *struct{} `xml:"error"`
				Skipped *struct {
					Message string `xml:"message,attr"`
					Text    string `xml:",chardata"`
				} `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("not XML: %v\n%s", err, buf.String())
	}
	// The warning is a skipped case with its message: CI systems show
	// those, and would show a pass as green.
	if doc.Tests != 5 || doc.Failures != 1 || doc.Errors != 1 || doc.Skipped != 2 || len(doc.Suites) != 1 || len(doc.Suites[0].Cases) != 5 {
		t.Fatalf("counts: %+v", doc)
	}
	b := doc.Suites[0].Cases[1]
	if b.Name != "b" || b.Failure == nil || b.Failure.Message != "broken <&>" || !strings.Contains(b.Failure.Text, "remediation: fix it") || b.Class == "" {
		t.Fatalf("failure case: %+v", b)
	}
	if w := doc.Suites[0].Cases[2].Skipped; w == nil || !strings.HasPrefix(w.Message, "WARNING: ") {
		t.Fatalf("the warning case: %+v", doc.Suites[0].Cases[2])
	}
	if doc.Suites[0].Cases[3].Skipped == nil || doc.Suites[0].Cases[4].Error == nil || doc.Suites[0].Cases[2].Failure != nil {
		t.Fatalf("skipped/error/warn cases: %+v", doc.Suites[0].Cases)
	}
	if !strings.HasPrefix(buf.String(), `<?xml version="1.0" encoding="UTF-8"?>`) {
		t.Fatal("missing XML header")
	}
}
