// Package install holds the harness's checks of how the reference
// implementation is installed and kept running: who it may act as, how its
// webhook's certificate is renewed, what a stopped webhook blocks, and that
// only one controller-manager acts at a time. They prove properties of the
// install (deploy/, and the same manifests on the local cluster), not KEP
// items, so they carry the Harness label. Import the package to register the
// specs.
package install
