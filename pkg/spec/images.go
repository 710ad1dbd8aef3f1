package spec

import (
	"github.com/distribution/reference"
)

// ImageProblems checks an image reference with the parser container runtimes
// use. problem makes the reference invalid; warning is worth saying (a
// mutable tag such as latest, or no tag at all).
func ImageProblems(ref string) (problem, warning string) {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return "is not an image reference such as registry/repository:tag or registry/repository@sha256:...: " + err.Error(), ""
	}
	if named.String() != ref && reference.FamiliarString(named) != ref {
		return "is not an image reference in canonical form (" + named.String() + ")", ""
	}
	_, digested := named.(reference.Digested)
	tagged, hasTag := named.(reference.Tagged)
	switch {
	case digested:
		return "", ""
	case !hasTag:
		return "", "has no tag, so every node pulls whatever latest is when it starts; pin a tag or a digest"
	case tagged.Tag() == "latest":
		return "", "uses the mutable tag latest, so nodes may run different images; pin a version or a digest"
	}
	return "", ""
}
