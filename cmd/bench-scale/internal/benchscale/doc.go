// Package benchscale measures an implementation of the KEPs at scale on the
// harness's local cluster: N gang Deployments and N/2 gang StatefulSets, then
// the same objects without scheduling intent, for several N, with the
// implementation's gates on and off in the same controller binary
// (`make bench-scale`, cmd/bench-scale).
//
// It reads what the processes and the apiserver say, never the
// implementation's code: time to bound from a pod watch, CPU and memory from
// /proc, requests from the apiserver's audit log, filtered by the
// controllers' users. The pure parts (statistics, /proc and audit parsing,
// the report) are separate from the run so they are unit-tested.
package benchscale
