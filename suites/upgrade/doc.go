// Package upgrade holds the gate-toggle, upgrade -> downgrade -> upgrade,
// version-skew, crash-recovery and fault specs (ids D-P*, S-P*, D-E6, S-I8):
// Serial and Disruptive. Gate, upgrade and skew specs reconfigure components
// through framework.Reconfigure, which restarts the local cluster's processes
// or runs a vendor's --reconfigure-command; crash specs use the controller
// restart hook; fault specs need the harness's own cluster. Import it to
// register them.
package upgrade
