package kubeletcsr

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"

	"github.com/eksa-metrics/eksa-metrics/pkg/certs"
	"github.com/eksa-metrics/eksa-metrics/pkg/safetext"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// Component is the name the approver's events come from.
const Component = "eksa-metrics-kubelet-serving-approver"

// Result is what one pass decided.
type Result struct {
	Approved, Denied []string
	// Signed are the approved requests whose certificate was written.
	Signed []string
	// Waiting are requests left pending: their node is not registered
	// yet, or its Machine does not list what they ask for yet (NotVouched,
	// for at most the Approver's Grace), or approvals wait for
	// kube-controller-manager.
	Waiting []string
}

// Approver decides the kubelet-serving requests of one cluster.
type Approver struct {
	Client kubernetes.Interface
	Policy Policy
	// Machines are where the Machines that vouch for the nodes are read.
	Machines MachineSource
	// Grace is how long a request the Machines do not vouch for waits,
	// from its creation, before it is denied (NoMachineGrace when 0).
	Grace time.Duration
	// Log receives one line per decision (names escaped: they come from
	// the requests); Events, when set, an event on each request decided.
	Log    io.Writer
	Events events.EventRecorder
	// Metrics, when set, count each decision (NewMetrics).
	Metrics *Metrics
	// CA, when set, signs the approved requests (kube-controller-manager
	// then signs none: tls.kubeletServingCertificates takes the signer from
	// it).
	CA *CAFiles

	held string // why approvals wait, as last logged
}

// errNoMachines: an Approver needs where its Machines are.
var errNoMachines = errors.New("no source of Machines: the approver approves a node's names only as its Machine lists them")

// NoMachineGrace is how long a request waits for the node's Machine to
// list what it asks for: the infrastructure provider writes a Machine's
// addresses once the machine runs, and a kubelet files its request as it
// starts.
const NoMachineGrace = 10 * time.Minute

func (a *Approver) grace() time.Duration {
	if a.Grace > 0 {
		return a.Grace
	}
	return NoMachineGrace
}

// kube-controller-manager's mirror pods, by kubeadm's labels, and the label
// kubeadm gives the control-plane Nodes (which NodeRestriction forbids a
// kubelet to set on its own Node).
const (
	kcmSelector       = "component=kube-controller-manager"
	controlPlaneLabel = "node-role.kubernetes.io/control-plane"
)

// clusterCASigning says why a kube-controller-manager may still sign
// kubelet-serving requests itself, with the cluster CA ("" when none does):
// one on a control-plane Node runs with --cluster-signing-cert-file or
// --cluster-signing-kubelet-serving-cert-file (its machine predates the
// signer flags tls.kubeletServingCertificates renders: EKS Anywhere's
// upgrade replaces it), or none can be seen. Only pods on control-plane
// Nodes count: any node may write a mirror pod of its own.
func clusterCASigning(pods []*corev1.Pod, nodes map[string]*corev1.Node) string {
	seen := false
	for _, p := range pods {
		n := nodes[p.Spec.NodeName]
		if n == nil {
			continue
		}
		if _, ok := n.Labels[controlPlaneLabel]; !ok {
			continue
		}
		seen = true
		for _, c := range p.Spec.Containers {
			words := append(slices.Clone(c.Command), c.Args...)
			for i, w := range words {
				for _, f := range []string{"--cluster-signing-cert-file", "--cluster-signing-kubelet-serving-cert-file"} {
					v, ok := strings.CutPrefix(w, f+"=")
					if w == f && i+1 < len(words) {
						v, ok = words[i+1], true
					}
					if ok && v != "" {
						return fmt.Sprintf("kube-controller-manager on node %s runs with %s=%s, so it would sign an approved request with that CA before this approver signs it with its own: approvals wait until no control-plane machine predates tls.kubeletServingCertificates (eksctl anywhere upgrade cluster replaces them)", p.Spec.NodeName, f, v)
					}
				}
			}
		}
	}
	if !seen {
		return "no kube-controller-manager pod (kube-system, " + kcmSelector + ") runs on a Node labelled " + controlPlaneLabel + ", so whether one would sign approved requests with the cluster CA is unknown: approvals wait"
	}
	return ""
}

// trimPod keeps of a kube-controller-manager pod what is read: its node
// and its containers' command lines.
func trimPod(p *corev1.Pod) *corev1.Pod {
	out := &corev1.Pod{TypeMeta: p.TypeMeta, ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion},
		Spec: corev1.PodSpec{NodeName: p.Spec.NodeName}}
	for _, c := range p.Spec.Containers {
		out.Spec.Containers = append(out.Spec.Containers, corev1.Container{Name: c.Name, Command: c.Command, Args: c.Args})
	}
	return out
}

// Lifetimes of the certificates the approver signs: at most a year
// (kube-controller-manager's --cluster-signing-duration default), at least
// 10 minutes, whatever a request's spec.expirationSeconds asks.
const (
	MaxLifetime = 365 * 24 * time.Hour
	MinLifetime = 10 * time.Minute
)

// CAFiles are the PEM files of the kubelet-serving CA (a Secret's
// volume), read at each signature so that a replaced CA is used without a
// restart.
type CAFiles struct{ Cert, Key string }

// Load reads and checks the CA.
func (f *CAFiles) Load() (certs.Pair, error) {
	var p certs.Pair
	var err error
	if p.Cert, err = os.ReadFile(f.Cert); err != nil {
		return p, fmt.Errorf("reading the kubelet-serving CA: %w", err)
	}
	if p.Key, err = os.ReadFile(f.Key); err != nil {
		return p, fmt.Errorf("reading the kubelet-serving CA's key: %w", err)
	}
	if err := certs.CheckCA(p); err != nil {
		return p, fmt.Errorf("the kubelet-serving CA in %s: %w", f.Cert, err)
	}
	return p, nil
}

// Pass decides every pending kubelet-serving request once, from a fresh
// list: approves those that pass Check, denies the others (a denied request
// is final; the kubelet files a new one), and leaves pending those whose
// node does not exist yet. Requests of other signers are never read.
func (a *Approver) Pass(ctx context.Context) (Result, error) {
	list, err := a.Client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.signerName", certificatesv1.KubeletServingSignerName).String()})
	if err != nil {
		return Result{}, fmt.Errorf("listing the %s CertificateSigningRequests: %w", certificatesv1.KubeletServingSignerName, err)
	}
	nodes, err := a.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return Result{}, fmt.Errorf("listing the Nodes: %w", err)
	}
	var pods []*corev1.Pod
	if a.CA != nil {
		list, err := a.Client.CoreV1().Pods(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{LabelSelector: kcmSelector})
		if err != nil {
			return Result{}, fmt.Errorf("listing the kube-controller-manager pods: %w", err)
		}
		for i := range list.Items {
			pods = append(pods, trimPod(&list.Items[i]))
		}
	}
	if a.Machines == nil {
		return Result{}, errNoMachines
	}
	machines, err := a.Machines.List(ctx)
	if err != nil {
		return Result{}, err
	}
	csrs := make([]*certificatesv1.CertificateSigningRequest, len(list.Items))
	for i := range list.Items {
		csrs[i] = trimRequest(&list.Items[i])
	}
	ns := make([]*corev1.Node, len(nodes.Items))
	for i := range nodes.Items {
		ns[i] = trimNode(&nodes.Items[i])
	}
	return a.decide(ctx, csrs, ns, pods, machines)
}

// Pass is one pass of an Approver with policy's names refused, the
// Machines read from machines, and no events.
func Pass(ctx context.Context, client kubernetes.Interface, machines MachineSource, policy Policy) (Result, error) {
	return (&Approver{Client: client, Policy: policy, Machines: machines, Log: io.Discard}).Pass(ctx)
}

// decide decides the pending requests among csrs against nodes, every Node
// of the cluster, writes each decision, and signs (with a CA) each approved
// request that has no certificate yet and passes the checks.
func (a *Approver) decide(ctx context.Context, csrs []*certificatesv1.CertificateSigningRequest, nodes []*corev1.Node, kcms []*corev1.Pod, machines []spec.Machine) (Result, error) {
	var res Result
	byName := map[string]*corev1.Node{}
	for _, n := range nodes {
		byName[n.Name] = n
	}
	// With a CA of its own, an approval must never reach a
	// kube-controller-manager that would sign it with the cluster CA first.
	hold := ""
	if a.CA != nil {
		hold = clusterCASigning(kcms, byName)
		if hold != a.held && hold != "" {
			a.logf("waiting: %s", safetext.Escape(hold))
		}
		a.held = hold
	}
	v := vouch(machines)
	now := time.Now()
	for _, csr := range csrs {
		approved, denied := conditions(csr)
		if denied || (approved && (a.CA == nil || signed(csr))) {
			continue
		}
		var node *corev1.Node
		if name := NodeOf(csr); name != "" {
			if node = byName[name]; node == nil {
				res.Waiting = append(res.Waiting, csr.Name)
				continue
			}
		}
		var req *x509.CertificateRequest
		var why error
		if len(csr.Spec.Request) == 0 {
			// The API server refuses an empty request: trimRequest dropped it.
			why = &TooLarge{}
		} else {
			req, why = check(csr, node, v, a.Policy)
		}
		var notYet *NotVouched
		if errors.As(why, &notYet) && !approved && now.Before(csr.CreationTimestamp.Add(a.grace())) {
			res.Waiting = append(res.Waiting, csr.Name)
			continue
		}
		if approved {
			// Approved, by us or by someone with the approve verb, and not
			// signed: signed only for a request that passes the checks now.
			if why != nil {
				a.logf("not signing approved csr=%q node=%q: %s", csr.Name, safetext.Escape(NodeOf(csr)), safetext.Escape(why.Error()))
				continue
			}
			if err := a.sign(ctx, csr, req); err != nil {
				return res, err
			}
			res.Signed = append(res.Signed, csr.Name)
			continue
		}
		if why == nil && hold != "" {
			res.Waiting = append(res.Waiting, csr.Name)
			continue
		}
		cond := certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: ReasonApproved,
			Message: "eksa-metrics: the node's own serving certificate, for its own names and addresses"}
		if why != nil {
			cond.Type, cond.Reason, cond.Message = certificatesv1.CertificateDenied, ReasonDenied, "eksa-metrics: "+safetext.Escape(why.Error())
		}
		// The approval subresource takes only the conditions from what is
		// sent (the API server keeps the stored spec and the rest of the
		// status), so the trimmed copy the cache holds will do.
		full := csr.DeepCopy() // a cache's object is never written to
		full.Status.Conditions = append(full.Status.Conditions, cond)
		updated, err := a.Client.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, full.Name, full, metav1.UpdateOptions{})
		if err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				continue // decided or gone meanwhile; the next pass sees it
			}
			return res, fmt.Errorf("writing the decision on CertificateSigningRequest %s: %w", csr.Name, err)
		}
		a.record(full, cond)
		if cond.Type != certificatesv1.CertificateApproved {
			res.Denied = append(res.Denied, csr.Name+": "+cond.Message)
			a.Metrics.decided(DecisionDenied, denyCause(why))
			continue
		}
		res.Approved = append(res.Approved, csr.Name)
		a.Metrics.decided(DecisionApproved, "")
		if a.CA != nil {
			if err := a.sign(ctx, updated, req); err != nil {
				return res, err
			}
			res.Signed = append(res.Signed, csr.Name)
		}
	}
	a.Metrics.passed(len(res.Waiting), hold != "")
	return res, nil
}

// sign issues the certificate of an approved request (req: its parsed,
// checked spec.request) with the CA and writes it into the request's status.
// A request changed or gone meanwhile is left to the next pass.
func (a *Approver) sign(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) error {
	ca, err := a.CA.Load()
	if err != nil {
		return err
	}
	usage := x509.KeyUsageDigitalSignature
	if slices.Contains(csr.Spec.Usages, certificatesv1.UsageKeyEncipherment) {
		usage |= x509.KeyUsageKeyEncipherment
	}
	lifetime := MaxLifetime
	if s := csr.Spec.ExpirationSeconds; s != nil {
		// What kube-controller-manager's signer does with it: at most the
		// signer's duration, at least 10 minutes.
		lifetime = min(max(time.Duration(*s)*time.Second, MinLifetime), MaxLifetime)
	}
	cert, err := certs.SignRequest(ca, req, usage, lifetime, time.Now())
	if err != nil {
		return fmt.Errorf("signing CertificateSigningRequest %s: %w", csr.Name, err)
	}
	full := csr.DeepCopy()
	full.Status.Certificate = cert
	if _, err := a.Client.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, full, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("writing the certificate of CertificateSigningRequest %s: %w", csr.Name, err)
	}
	a.logf("signed csr=%q node=%q for %d days", csr.Name, safetext.Escape(NodeOf(csr)), int(lifetime.Hours()/24))
	a.Metrics.decided(DecisionSigned, "")
	return nil
}

func (a *Approver) logf(format string, args ...any) {
	if a.Log != nil {
		fmt.Fprintf(a.Log, format+"\n", args...)
	}
}

// record logs a decision on one line, every value quoted, and sends its event.
func (a *Approver) record(csr *certificatesv1.CertificateSigningRequest, cond certificatesv1.CertificateSigningRequestCondition) {
	decision, kind := "approved", corev1.EventTypeNormal
	if cond.Type == certificatesv1.CertificateDenied {
		decision, kind = "denied", corev1.EventTypeWarning
	}
	if a.Log != nil {
		fmt.Fprintf(a.Log, "%s csr=%q node=%q reason=%q message=%q\n", decision, csr.Name, safetext.Escape(NodeOf(csr)), cond.Reason, cond.Message)
	}
	if a.Events != nil {
		a.Events.Eventf(csr, nil, kind, cond.Reason, string(cond.Type), "%s", cond.Message)
	}
}

// conditions says whether a request is approved, and whether it is denied
// or failed (never signed then).
func conditions(csr *certificatesv1.CertificateSigningRequest) (approved, final bool) {
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateApproved:
			approved = true
		case certificatesv1.CertificateDenied, certificatesv1.CertificateFailed:
			final = true
		}
	}
	return approved, final
}

// signedMarker stands, in the cache, for a certificate a request holds
// (trimRequest): only its presence is read.
var signedMarker = []byte{0}

func signed(csr *certificatesv1.CertificateSigningRequest) bool {
	return len(csr.Status.Certificate) > 0
}

// trimRequest is what the approver keeps of a request: everything but a
// spec.request larger than MaxRequestBytes (then nil: the API server
// accepts no request without one, so nil says it was too large), and no
// managed fields, so that the memory the cache holds is bounded per request
// whatever a node files.
func trimRequest(csr *certificatesv1.CertificateSigningRequest) *certificatesv1.CertificateSigningRequest {
	csr.ManagedFields = nil
	if len(csr.Spec.Request) > MaxRequestBytes {
		csr.Spec.Request = nil
	}
	if len(csr.Status.Certificate) > 0 {
		csr.Status.Certificate = signedMarker // only whether it is signed is read
	}
	return csr
}

// trimNode keeps of a Node what the approver reads: its name and the
// control-plane label (its status is the node's own report: never read).
func trimNode(n *corev1.Node) *corev1.Node {
	return &corev1.Node{
		TypeMeta:   n.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion, CreationTimestamp: n.CreationTimestamp, Labels: controlPlaneOnly(n.Labels)},
	}
}

func controlPlaneOnly(l map[string]string) map[string]string {
	if v, ok := l[controlPlaneLabel]; ok {
		return map[string]string{controlPlaneLabel: v}
	}
	return nil
}

// transform is an informer's transform that trims each object of type T
// before the cache stores it (other objects, such as a deletion's
// tombstone, pass as they are).
func transform[T any](trim func(T) T) cache.TransformFunc {
	return func(o any) (any, error) {
		if v, ok := o.(T); ok {
			return trim(v), nil
		}
		return o, nil
	}
}

// KubernetesServiceIPs are the addresses of the default/kubernetes Service
// (nil when it cannot be read): never approved, even where the Service
// ranges were not given.
func KubernetesServiceIPs(ctx context.Context, client kubernetes.Interface) []net.IP {
	svc, err := client.CoreV1().Services(metav1.NamespaceDefault).Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		return nil
	}
	var out []net.IP
	ips := svc.Spec.ClusterIPs // the first is spec.clusterIP
	if len(ips) == 0 {
		ips = []string{svc.Spec.ClusterIP}
	}
	for _, s := range ips {
		if ip := net.ParseIP(s); ip != nil {
			out = append(out, ip)
		}
	}
	return out
}

// Run approves for as long as ctx lasts, from watches: of that signer's
// requests only, of the Nodes and of the Machines (each trimmed to what is
// read, so that a node cannot grow the approver's memory beyond a bound per
// object). A pass runs whenever a request is filed or changes, a Node
// registers or a Machine changes what it lists, and every resync period
// (which also denies the requests whose grace is over); each decision is
// logged and, with Events, sent as an event.
func (a *Approver) Run(ctx context.Context, resync time.Duration) error {
	trigger := make(chan struct{}, 1)
	poke := func() {
		select {
		case trigger <- struct{}{}:
		default: // a pass is due already
		}
	}
	csrFactory := informers.NewSharedInformerFactoryWithOptions(a.Client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.signerName", certificatesv1.KubeletServingSignerName).String()
	}))
	csrs := csrFactory.Certificates().V1().CertificateSigningRequests()
	nodeFactory := informers.NewSharedInformerFactory(a.Client, 0)
	nodes := nodeFactory.Core().V1().Nodes()
	if err := csrs.Informer().SetTransform(transform(trimRequest)); err != nil {
		return err
	}
	if err := nodes.Informer().SetTransform(transform(trimNode)); err != nil {
		return err
	}
	if _, err := csrs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) { poke() }, UpdateFunc: func(any, any) { poke() }}); err != nil {
		return err
	}
	// A Node's status changes at every heartbeat; a pass is due only when
	// one registers or its labels change (the control-plane label is read).
	if _, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) { poke() }, UpdateFunc: func(old, cur any) {
		o, ok1 := old.(*corev1.Node)
		n, ok2 := cur.(*corev1.Node)
		if !ok1 || !ok2 || !reflect.DeepEqual(o.Labels, n.Labels) {
			poke()
		}
	}}); err != nil {
		return err
	}
	factories := []informers.SharedInformerFactory{csrFactory, nodeFactory}
	synced := []cache.InformerSynced{csrs.Informer().HasSynced, nodes.Informer().HasSynced}
	// With a CA of its own: kube-controller-manager's pods, each trimmed to
	// its node and command lines (clusterCASigning).
	listPods := func() ([]*corev1.Pod, error) { return nil, nil }
	if a.CA != nil {
		podFactory := informers.NewSharedInformerFactoryWithOptions(a.Client, 0, informers.WithNamespace(metav1.NamespaceSystem),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = kcmSelector }))
		pods := podFactory.Core().V1().Pods()
		if err := pods.Informer().SetTransform(transform(trimPod)); err != nil {
			return err
		}
		if _, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) { poke() }, DeleteFunc: func(any) { poke() },
			UpdateFunc: func(old, cur any) {
				o, ok1 := old.(*corev1.Pod)
				n, ok2 := cur.(*corev1.Pod)
				if !ok1 || !ok2 || !reflect.DeepEqual(o.Spec, n.Spec) {
					poke()
				}
			}}); err != nil {
			return err
		}
		factories, synced = append(factories, podFactory), append(synced, pods.Informer().HasSynced)
		listPods = func() ([]*corev1.Pod, error) { return pods.Lister().List(labels.Everything()) }
	}
	if a.Machines == nil {
		return errNoMachines
	}
	// Stopped with the other informers when ctx ends (Run returns then).
	listMachines, machinesSynced, err := a.Machines.Watch(ctx, poke)
	if err != nil {
		return err
	}
	synced = append(synced, machinesSynced)
	for _, f := range factories {
		f.Start(ctx.Done())
		defer f.Shutdown()
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return ctx.Err()
	}
	fmt.Fprintf(a.Log, "approving %s requests of nodes for the names and addresses %s list\n", certificatesv1.KubeletServingSignerName, a.Machines)
	tick := time.NewTicker(resync)
	defer tick.Stop()
	poke()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			poke()
		case <-trigger:
			pending, err := csrs.Lister().List(labels.Everything())
			if err != nil {
				return err
			}
			all, err := nodes.Lister().List(labels.Everything())
			if err != nil {
				return err
			}
			kcms, err := listPods()
			if err != nil {
				return err
			}
			machines, err := listMachines()
			if err != nil {
				// A published list that does not parse: nothing is decided
				// until it does (the controller rewrites it).
				fmt.Fprintf(a.Log, "error: %s\n", safetext.Escape(err.Error()))
				a.Metrics.failed()
				continue
			}
			if _, err := a.decide(ctx, pending, all, kcms, machines); err != nil {
				// The next event or tick tries again.
				fmt.Fprintf(a.Log, "error: %s\n", safetext.Escape(err.Error()))
				a.Metrics.failed()
			}
		}
	}
}

// NewEvents is an event recorder writing to client's events.k8s.io API
// (events on a request go to the default namespace), and a stop function.
func NewEvents(client kubernetes.Interface) (events.EventRecorder, func()) {
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: client.EventsV1()})
	stop := make(chan struct{})
	b.StartRecordingToSink(stop)
	return b.NewRecorder(scheme.Scheme, Component), func() { close(stop); b.Shutdown() }
}
