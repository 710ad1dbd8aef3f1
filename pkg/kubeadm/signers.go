package kubeadm

// kube-controller-manager signs every built-in signer with the cluster CA
// that kubeadm gives it (--cluster-signing-cert-file and
// --cluster-signing-key-file: the CA of the API server's own certificate,
// of every kubeconfig and of every ServiceAccount token's ca.crt), the
// kubelets' serving certificates (kubernetes.io/kubelet-serving) included.
// With tls.kubeletServingCertificates eksa-metrics' approver signs those
// with a CA of their own, which only the kubelet scrapes trust; so
// kube-controller-manager must stop signing them: the generic flags are
// emptied (kube-controller-manager refuses them next to per-signer flags)
// and each of the three other signers keeps the cluster CA by its own
// flags. kube-controller-manager then starts no signer for
// kubernetes.io/kubelet-serving (kubernetes
// cmd/kube-controller-manager/app/certificates.go; the flags:
// cmd/kube-controller-manager/app/options/csrsigningcontroller.go).

// PKIDir is where kubeadm keeps the cluster CA on a control-plane machine
// (its default certificatesDir, which it mounts into kube-controller-manager;
// EKS Anywhere's Bottlerocket machines, whose directory differs, get no
// kubelet serving certificates).
const PKIDir = "/etc/kubernetes/pki"

// The per-signer flags that keep the cluster CA.
var clusterCASigners = []string{"kubelet-client", "kube-apiserver-client", "legacy-unknown"}

type signingItem struct {
	Arg
	why string
}

func signingItems() []signingItem {
	why := "tls.kubeletServingCertificates: kube-controller-manager no longer signs kubernetes.io/kubelet-serving with the cluster CA (eksa-metrics' approver signs it with a CA only kubelet scrapes trust)"
	out := []signingItem{
		{Arg{"cluster-signing-cert-file", ""}, why},
		{Arg{"cluster-signing-key-file", ""}, why},
	}
	for _, s := range clusterCASigners {
		keep := "tls.kubeletServingCertificates: the " + s + " signer keeps the cluster CA"
		out = append(out,
			signingItem{Arg{"cluster-signing-" + s + "-cert-file", PKIDir + "/ca.crt"}, keep},
			signingItem{Arg{"cluster-signing-" + s + "-key-file", PKIDir + "/ca.key"}, keep})
	}
	return out
}

// SigningFlags are the names of the kube-controller-manager flags
// tls.kubeletServingCertificates sets.
func SigningFlags() []string {
	var out []string
	for _, it := range signingItems() {
		out = append(out, it.Name)
	}
	return out
}
