package cluster

import (
	"crypto/sha256"
	"encoding/json"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
)

// held is what a Cluster's inventory watches (WatchInventory) know of the
// objects eksa-metrics keeps for it in one cluster, and what it last
// applied there: a plan reads these instead of the API server. A fleet's
// first pass is one plan per Cluster, and every drift or spec change
// another; without them each plan read every object it renders and listed
// every kind it may prune.
//
// What a plan decides from them:
//   - an object the synced watch does not hold is read: the watch is of
//     the Cluster's inventory only, and an object of that name that
//     eksa-metrics did not create (or created for another Cluster) is
//     there unseen; a server-side apply would take it over, so the plan
//     reads it and refuses it (ForeignObjectError) or creates it;
//   - an object the watch holds at the resourceVersion eksa-metrics' last
//     apply of the same content returned is unchanged, without a read;
//   - anything else is read and compared, as without watches;
//   - prune lists the watched kinds from the watches, and a kind not
//     watched (no longer rendered) once: when nothing of it is ours, it is
//     not listed again while the watches last, for nothing of it is applied
//     meanwhile.
type held struct {
	mu sync.Mutex
	// stores are the inventory watches' stores, by kind, namespace (""
	// for a watch of every namespace) and name (a watch of one name).
	stores map[kindIn]*driftStore
	// applied is, by inventoryKey, what eksa-metrics' last apply sent
	// (a digest) and the resourceVersion it returned.
	applied map[string]appliedAs
	// none are the kinds not watched that a list found nothing of ours of.
	none map[string]bool
}

type kindIn struct{ kind, namespace, name string }

type appliedAs struct {
	digest          [sha256.Size]byte
	resourceVersion string
	// generation and meta (metaHash) of what the apply returned: a status
	// update since (a DaemonSet's, say) changes neither.
	generation int64
	meta       uint64
}

// since says whether live is what the apply returned, or differs from it
// by its status only.
func (a appliedAs) since(live seen) bool {
	return a.resourceVersion == live.resourceVersion || a.generation > 0 && a.generation == live.generation && a.meta == live.meta
}

func newHeld() *held {
	return &held{stores: map[kindIn]*driftStore{}, applied: map[string]appliedAs{}, none: map[string]bool{}}
}

// hold makes h what plans for clusterName read in c, until release.
func (c *Cluster) hold(clusterName string, h *held) {
	c.heldMu.Lock()
	defer c.heldMu.Unlock()
	if c.held == nil {
		c.held = map[string]*held{}
	}
	c.held[clusterName] = h
}

// release forgets h, unless a newer hold replaced it.
func (c *Cluster) release(clusterName string, h *held) {
	c.heldMu.Lock()
	defer c.heldMu.Unlock()
	if c.held[clusterName] == h {
		delete(c.held, clusterName)
	}
}

// heldFor is what the watches of the Cluster an object belongs to (its
// ClusterLabel) hold, nil without watches.
func (c *Cluster) heldFor(clusterName string) *held {
	if clusterName == "" {
		return nil
	}
	c.heldMu.Lock()
	defer c.heldMu.Unlock()
	return c.held[clusterName]
}

// store is the synced watch of kind that covers the object namespace/name,
// nil when none.
func (h *held) store(kind, namespace, name string) *driftStore {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, k := range []kindIn{{kind, namespace, name}, {kind, namespace, ""}, {kind, "", ""}} {
		if s, ok := h.stores[k]; ok && s.synced() {
			return s
		}
	}
	return nil
}

// storesOf are the watches of kind when every one of them has synced
// (ok false otherwise, or when the kind is not watched).
func (h *held) storesOf(kind string) (stores []*driftStore, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for k, s := range h.stores {
		if k.kind != kind {
			continue
		}
		if !s.synced() {
			return nil, false
		}
		stores = append(stores, s)
	}
	return stores, len(stores) > 0
}

func digestOf(data []byte) [sha256.Size]byte { return sha256.Sum256(data) }

// heldStep plans obj from the watches, without a read; ok is false when
// they cannot tell.
func (c *Cluster) heldStep(s *Step) (ok bool) {
	u := unstructured.Unstructured{Object: s.Object}
	h := c.heldFor(u.GetLabels()[templates.ClusterLabel])
	if h == nil {
		return false
	}
	store := h.store(u.GetKind(), u.GetNamespace(), u.GetName())
	if store == nil {
		return false
	}
	live, found := store.get(objectKey(&u))
	if !found {
		return false // read: it may be there, and not ours
	}
	h.mu.Lock()
	last, applied := h.applied[inventoryKey(u.GetKind(), u.GetNamespace(), u.GetName())]
	h.mu.Unlock()
	if !applied || !live.ours || !live.byApply || !last.since(live) {
		return false
	}
	data, err := json.Marshal(s.Object)
	if err == nil && last.digest == digestOf(data) {
		s.Action = Unchanged
		return true
	}
	return false
}

// recordApplied notes what an apply of u sent (data) and what it returned.
func (c *Cluster) recordApplied(u *unstructured.Unstructured, data []byte, out *unstructured.Unstructured) {
	h := c.heldFor(u.GetLabels()[templates.ClusterLabel])
	if h == nil || out == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.applied[inventoryKey(u.GetKind(), u.GetNamespace(), u.GetName())] = appliedAs{digest: digestOf(data),
		resourceVersion: out.GetResourceVersion(), generation: out.GetGeneration(), meta: metaHash(out)}
	delete(h.none, u.GetKind())
}

// heldPrunable are the objects of gvk in the Cluster's inventory that
// eksa-metrics applied (an Apply entry of its managed fields when the
// watch saw them), from the watches, as kind, name, namespace and UID; ok
// is false when they cannot tell (then the caller lists, and notes an
// empty list with noneListed).
func (h *held) heldPrunable(gvk schema.GroupVersionKind) (items []unstructured.Unstructured, ok bool) {
	if h == nil {
		return nil, false
	}
	h.mu.Lock()
	none := h.none[gvk.Kind]
	h.mu.Unlock()
	if none {
		return nil, true
	}
	stores, ok := h.storesOf(gvk.Kind)
	if !ok {
		return nil, false
	}
	for _, s := range stores {
		for key, o := range s.snapshot() {
			if !o.ours || !o.byApply {
				continue
			}
			u := unstructured.Unstructured{}
			u.SetGroupVersionKind(gvk)
			ns, name := splitKey(key)
			u.SetNamespace(ns)
			u.SetName(name)
			u.SetUID(o.uid)
			items = append(items, u)
		}
	}
	return items, true
}

// noneListed notes that a list of a kind the watches do not hold found
// nothing eksa-metrics applied.
func (h *held) noneListed(kind string) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	watched := false
	for k := range h.stores {
		watched = watched || k.kind == kind
	}
	if !watched {
		h.none[kind] = true
	}
}
