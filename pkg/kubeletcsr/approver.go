package kubeletcsr

import (
	"context"
	"fmt"
	"io"
	"net"
	"reflect"
	"slices"
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

	"github.com/eksa-metrics/eksa-metrics/pkg/safetext"
)

// Component is the name the approver's events come from.
const Component = "eksa-metrics-kubelet-serving-approver"

// Result is what one pass decided.
type Result struct {
	Approved, Denied []string
	// Waiting are requests left pending: their node is not registered yet.
	Waiting []string
}

// Approver decides the kubelet-serving requests of one cluster.
type Approver struct {
	Client kubernetes.Interface
	Policy Policy
	// Log receives one line per decision (names escaped: they come from
	// the requests); Events, when set, an event on each request decided.
	Log    io.Writer
	Events events.EventRecorder
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
	csrs := make([]*certificatesv1.CertificateSigningRequest, len(list.Items))
	for i := range list.Items {
		csrs[i] = trimRequest(&list.Items[i])
	}
	ns := make([]*corev1.Node, len(nodes.Items))
	for i := range nodes.Items {
		ns[i] = trimNode(&nodes.Items[i])
	}
	return a.decide(ctx, csrs, ns)
}

// Pass is one pass of an Approver with policy's names refused, and no
// events.
func Pass(ctx context.Context, client kubernetes.Interface, policy Policy) (Result, error) {
	return (&Approver{Client: client, Policy: policy, Log: io.Discard}).Pass(ctx)
}

// decide decides the pending requests among csrs against nodes, every Node
// of the cluster, and writes each decision.
func (a *Approver) decide(ctx context.Context, csrs []*certificatesv1.CertificateSigningRequest, nodes []*corev1.Node) (Result, error) {
	var res Result
	byName := map[string]*corev1.Node{}
	for _, n := range nodes {
		byName[n.Name] = n
	}
	owners := ownersOf(nodes)
	for _, csr := range csrs {
		if decided(csr) {
			continue
		}
		var node *corev1.Node
		if name := NodeOf(csr); name != "" {
			if node = byName[name]; node == nil {
				res.Waiting = append(res.Waiting, csr.Name)
				continue
			}
		}
		var why error
		if len(csr.Spec.Request) == 0 {
			// The API server refuses an empty request: trimRequest dropped it.
			why = fmt.Errorf("spec.request is larger than any kubelet's request (%d bytes): not read", MaxRequestBytes)
		} else {
			why = check(csr, node, owners, a.Policy)
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
		if _, err := a.Client.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, full.Name, full, metav1.UpdateOptions{}); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				continue // decided or gone meanwhile; the next pass sees it
			}
			return res, fmt.Errorf("writing the decision on CertificateSigningRequest %s: %w", csr.Name, err)
		}
		a.record(full, cond)
		if cond.Type == certificatesv1.CertificateApproved {
			res.Approved = append(res.Approved, csr.Name)
		} else {
			res.Denied = append(res.Denied, csr.Name+": "+cond.Message)
		}
	}
	return res, nil
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

func decided(csr *certificatesv1.CertificateSigningRequest) bool {
	return slices.ContainsFunc(csr.Status.Conditions, func(c certificatesv1.CertificateSigningRequestCondition) bool {
		return c.Type == certificatesv1.CertificateApproved || c.Type == certificatesv1.CertificateDenied
	})
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
	csr.Status.Certificate = nil // the signed certificate is never read
	return csr
}

// trimNode keeps of a Node what the approver reads: its name, creation
// time and addresses.
func trimNode(n *corev1.Node) *corev1.Node {
	return &corev1.Node{
		TypeMeta:   n.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion, CreationTimestamp: n.CreationTimestamp},
		Status:     corev1.NodeStatus{Addresses: n.Status.Addresses},
	}
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
// requests only, and of the Nodes (each trimmed to what is read, so that a
// node cannot grow the approver's memory beyond a bound per object). A pass
// runs whenever a request is filed or changes and whenever a Node registers
// or changes its addresses, and every resync period; each decision is
// logged and, with a, sent as an event.
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
	// one registers or its addresses change.
	if _, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) { poke() }, UpdateFunc: func(old, cur any) {
		o, ok1 := old.(*corev1.Node)
		n, ok2 := cur.(*corev1.Node)
		if !ok1 || !ok2 || !reflect.DeepEqual(o.Status.Addresses, n.Status.Addresses) {
			poke()
		}
	}}); err != nil {
		return err
	}
	for _, f := range []informers.SharedInformerFactory{csrFactory, nodeFactory} {
		f.Start(ctx.Done())
		defer f.Shutdown()
	}
	if !cache.WaitForCacheSync(ctx.Done(), csrs.Informer().HasSynced, nodes.Informer().HasSynced) {
		return ctx.Err()
	}
	fmt.Fprintf(a.Log, "approving %s requests of nodes for their own names and addresses\n", certificatesv1.KubeletServingSignerName)
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
			if _, err := a.decide(ctx, pending, all); err != nil {
				// The next event or tick tries again.
				fmt.Fprintf(a.Log, "error: %s\n", safetext.Escape(err.Error()))
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
