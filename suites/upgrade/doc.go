// Package upgrade holds the gate-toggle, upgrade -> downgrade -> upgrade,
// version-skew and crash-recovery specs (ids D-P*, S-P*): Serial and
// Disruptive, they restart components through framework.RequireLocalCluster.
// Import it to register them.
package upgrade
