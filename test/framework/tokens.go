package framework

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/eksa-metrics/eksa-metrics/pkg/kubeadm"
)

// StartTokenController runs the real kube-controller-manager with only its
// ServiceAccount token controller, which fills every
// kubernetes.io/service-account-token Secret with a token signed by the test
// bed's ServiceAccount key, the cluster CA (--root-ca-file) and the
// namespace, as it does on a kubeadm control plane. kubeconfig is an
// identity that may read ServiceAccounts and write Secrets.
func (cp *ControlPlane) StartTokenController(t testing.TB, kubeconfig string) *Process {
	t.Helper()
	args := Override(cp.KubeadmControllerManagerArgs(kubeconfig), kubeadm.Args{
		{Name: "controllers", Value: "serviceaccount-token"}, {Name: "leader-elect", Value: "false"},
		{Name: "secure-port", Value: "0"}, {Name: "use-service-account-credentials", Value: "false"},
	})
	return Start(t, "kube-controller-manager (token controller)", Binary(t, filepath.Join("k8s", cp.Version, "kube-controller-manager")), Args(args))
}

// WaitServiceAccountToken waits until the token controller has filled a
// kubernetes.io/service-account-token Secret (token, ca.crt, namespace) and
// returns it.
func (cp *ControlPlane) WaitServiceAccountToken(t testing.TB, namespace, name string, procs ...*Process) *corev1.Secret {
	t.Helper()
	var s *corev1.Secret
	WaitFor(t, "the token of Secret "+namespace+"/"+name, 60*time.Second, func() (bool, error) {
		var err error
		s, err = cp.Client.CoreV1().Secrets(namespace).Get(context.Background(), name, metav1.GetOptions{})
		return err == nil && len(s.Data[corev1.ServiceAccountTokenKey]) > 0 && len(s.Data[corev1.ServiceAccountRootCAKey]) > 0 &&
			len(s.Data[corev1.ServiceAccountNamespaceKey]) > 0, err
	}, procs...)
	return s
}

// SecretFiles writes a Secret's keys into a directory, as a Secret volume
// holds them, and returns them by the path a container mounting the volume
// at mountPath sees them (for StartInPod).
func SecretFiles(t testing.TB, s *corev1.Secret, mountPath string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{}
	for k, v := range s.Data {
		p := filepath.Join(dir, k)
		if err := os.WriteFile(p, v, 0o444); err != nil {
			t.Fatal(err)
		}
		files[mountPath+"/"+k] = p
	}
	return files
}

// InClusterEnv is what the kubelet sets in every container so that
// in-cluster configuration (client-go rest.InClusterConfig) finds the API
// server: here the test bed's.
func (cp *ControlPlane) InClusterEnv(t testing.TB) []string {
	t.Helper()
	u, err := url.Parse(cp.URL)
	if err != nil {
		t.Fatal(err)
	}
	return []string{"KUBERNETES_SERVICE_HOST=" + u.Hostname(), "KUBERNETES_SERVICE_PORT=" + u.Port()}
}

// StartInPod runs a binary in the test's own network namespace the way a
// container of a pod runs (see Host.StartInPod): in a mount namespace of its
// own, where files appear at the paths the pod mounts them, such as a token
// at /var/run/secrets/kubernetes.io/serviceaccount. It needs root.
func StartInPod(t testing.TB, name, bin string, args []string, files map[string]string, env ...string) *Process {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a pod's mount namespace needs root")
	}
	argv := podArgv(t, bin, args, files)
	return startCmd(t, name, exec.Command(argv[0], argv[1:]...), args, env...)
}
