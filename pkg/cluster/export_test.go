package cluster

// MappedGroups is mappedGroups, for the tests of package cluster_test.
var MappedGroups = mappedGroups

// PrunableGroupVersionKinds is prunable.
var PrunableGroupVersionKinds = prunable

// MappedKinds is mappedKinds.
var MappedKinds = mappedKinds
