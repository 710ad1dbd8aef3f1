package cluster

// Event is one thing done to, or seen in, a cluster: for a person (the CLI
// prints it) or a recorder (the controller turns it into a Kubernetes Event).
type Event struct {
	Cluster string // "management cluster", "workload cluster"
	Object  string // "Kind namespace/name"
	// Action: created, configured, edited, deleted, skipped, waiting, ready.
	Action  string
	Message string
}

// Reporter receives events; nil discards them.
type Reporter func(Event)

func (r Reporter) emit(e Event) {
	if r != nil {
		r(e)
	}
}
