package templates

import (
	"encoding/json"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// EditRecordAnnotation, on a management Deployment eksa-metrics edited,
// records the edit (a JSON EditRecord) on the Deployment's own metadata (no
// pod restarts for it), so that a later apply gives it back: entirely when
// the spec no longer edits that Deployment, and before another edit when it
// edits it otherwise. The Deployment then ends as a fresh apply of the new
// spec would leave it, whatever was applied before.
const EditRecordAnnotation = "metrics.anywhere.eks.amazonaws.com/edit"

// RestartAnnotation, on kube-proxy's pod template, restarts its pods after
// eksa-metrics changed their configuration (the time of the change).
const RestartAnnotation = "eksa-metrics/restartedAt"

// EditRecord is what an edit changed.
type EditRecord struct {
	// Container whose Args were Args before the edit and Edited after it.
	Container string   `json:"container"`
	Args      []string `json:"args"`
	Edited    []string `json:"edited"`
	// Mounts are the volume mounts the edit added to Container.
	Mounts []string `json:"mounts,omitempty"`
	// Sidecar is the container the edit added, Volumes the pod volumes.
	Sidecar string   `json:"sidecar,omitempty"`
	Volumes []string `json:"volumes,omitempty"`
}

// ReconcileDeployment makes d what edit e (nil: none) makes of the
// Deployment as it was before any eksa-metrics edit, records the edit in
// EditRecordAnnotation, and reports whether d changed and whether its pod
// template did (its pods restart).
//
// The recorded args are given back only while the container still has the
// args eksa-metrics left (eksctl anywhere upgrade management-components
// replaces the Deployment: its args are then the new release's, and stay).
// A sidecar and its volumes are eksa-metrics' own names and always go; one
// left by a release that kept no record is known by its token volume.
func ReconcileDeployment(d *appsv1.Deployment, e *DeploymentEdit) (changed, restarts bool, err error) {
	want := d.DeepCopy()
	if err := revertEdit(want); err != nil {
		return false, false, err
	}
	if e != nil {
		spec := &want.Spec.Template.Spec
		idx := slices.IndexFunc(spec.Containers, func(c corev1.Container) bool { return c.Name == e.Container })
		var args []string
		if idx >= 0 {
			args = slices.Clone(spec.Containers[idx].Args)
		}
		base := want.Spec.Template.DeepCopy()
		if _, err := e.Apply(want); err != nil {
			return false, false, err
		}
		if !equality.Semantic.DeepEqual(base, &want.Spec.Template) {
			rec := EditRecord{Container: e.Container, Args: args, Edited: slices.Clone(spec.Containers[idx].Args)}
			if e.Sidecar != nil {
				rec.Sidecar = e.Sidecar.Name
			}
			for _, m := range e.Mounts {
				rec.Mounts = append(rec.Mounts, m.Name)
			}
			for _, v := range e.Volumes {
				rec.Volumes = append(rec.Volumes, v.Name)
			}
			raw, _ := json.Marshal(rec)
			if want.Annotations == nil {
				want.Annotations = map[string]string{}
			}
			want.Annotations[EditRecordAnnotation] = string(raw)
		}
	}
	if len(want.Annotations) == 0 {
		want.Annotations = nil
	}
	sameTemplate := sameEditedTemplate(d.Spec.Template, want.Spec.Template, e)
	if sameTemplate && equality.Semantic.DeepEqual(d.Annotations, want.Annotations) || sameTemplate && len(d.Annotations) == 0 && len(want.Annotations) == 0 {
		return false, false, nil // as the edit wants it already (a sidecar the API server filled in defaults for included)
	}
	if sameTemplate {
		want.Spec.Template = d.Spec.Template
	}
	*d = *want
	return true, !sameTemplate, nil
}

// sameEditedTemplate: the live pod template is the wanted one, the API
// server's defaults in the sidecar aside (sidecarIs).
func sameEditedTemplate(live, want corev1.PodTemplateSpec, e *DeploymentEdit) bool {
	if e != nil && e.Sidecar != nil {
		li := slices.IndexFunc(live.Spec.Containers, func(c corev1.Container) bool { return c.Name == e.Sidecar.Name })
		wi := slices.IndexFunc(want.Spec.Containers, func(c corev1.Container) bool { return c.Name == e.Sidecar.Name })
		if li >= 0 && wi >= 0 && li == wi && sidecarIs(live.Spec.Containers[li], *e.Sidecar) {
			live = *live.DeepCopy()
			live.Spec.Containers[li] = want.Spec.Containers[wi]
		}
	}
	return equality.Semantic.DeepEqual(live, want)
}

// revertEdit gives back the recorded edit and drops the record.
func revertEdit(d *appsv1.Deployment) error {
	spec := &d.Spec.Template.Spec
	raw, recorded := d.Annotations[EditRecordAnnotation]
	var rec EditRecord
	if recorded {
		if err := json.Unmarshal([]byte(raw), &rec); err != nil {
			return fmt.Errorf("Deployment %s/%s: annotation %s is not eksa-metrics' record of its edit (%v): remove it (kubectl annotate deployment -n %s %s %s-) and apply again",
				d.Namespace, d.Name, EditRecordAnnotation, err, d.Namespace, d.Name, EditRecordAnnotation)
		}
		delete(d.Annotations, EditRecordAnnotation)
		if i := slices.IndexFunc(spec.Containers, func(c corev1.Container) bool { return c.Name == rec.Container }); i >= 0 {
			if slices.Equal(spec.Containers[i].Args, rec.Edited) {
				spec.Containers[i].Args = rec.Args
			}
			// The mounts are eksa-metrics' own names: they always go.
			spec.Containers[i].VolumeMounts = slices.DeleteFunc(spec.Containers[i].VolumeMounts, func(m corev1.VolumeMount) bool { return slices.Contains(rec.Mounts, m.Name) })
			if len(spec.Containers[i].VolumeMounts) == 0 {
				spec.Containers[i].VolumeMounts = nil
			}
		}
	}
	ours := func(c corev1.Container) bool {
		if recorded {
			return rec.Sidecar != "" && c.Name == rec.Sidecar
		}
		return c.Name == SidecarName && slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == SidecarTokenVolume })
	}
	if slices.ContainsFunc(spec.Containers, ours) {
		spec.Containers = slices.DeleteFunc(spec.Containers, ours)
		if !recorded {
			rec.Volumes = []string{SidecarTokenVolume, ServingVolume}
		}
	}
	spec.Volumes = slices.DeleteFunc(spec.Volumes, func(v corev1.Volume) bool { return slices.Contains(rec.Volumes, v.Name) })
	if len(spec.Volumes) == 0 {
		spec.Volumes = nil
	}
	return nil
}
