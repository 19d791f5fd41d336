//go:build tools

// Package parityimages pins the agnhost test image's source: the module
// k8s.io/kubernetes at the harness's version. It lives in a module of its own
// (like hack/ociimage) so that agnhost's dependencies stay out of the
// harness's go.mod. hack/parity-images.sh builds it.
package parityimages

import _ "k8s.io/kubernetes/test/images/agnhost"
