package framework

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/workload-aware/apps-harness/api/cluster"
	"github.com/workload-aware/apps-harness/framework/builder"
)

// Config is the suite's configuration, from flags of the test binary
// (`e2e.test --kubeconfig=...`) with defaults from the environment.
type Config struct {
	// Kubeconfig of an existing cluster. Empty: the suite starts a local cluster.
	Kubeconfig string
	// OutputDir holds the binaries built by hack/build-binaries.sh.
	OutputDir string
	// Addon is the descriptor of the implementation the local cluster runs
	// as an add-on (pkg/localcluster.Addon), read at run time so the suite
	// links none of its code; empty runs the cluster without one.
	Addon string
	// KubeVersion selects the binaries under OutputDir/bin/kube.
	KubeVersion string
	// SkewKubeVersion is an older Kubernetes version whose binaries (under
	// OutputDir/bin/kube) the version-skew specs run next to KubeVersion's.
	SkewKubeVersion string
	// Artifacts receives the cluster's logs, failure dumps and reports.
	Artifacts string
	// TopologyKey is the node label whose values are the domains topology
	// specs place gangs into (the local cluster labels racks with it).
	TopologyKey string
	// CrashMode is how crash-recovery specs (D-E6, S-I8) make the partial
	// state a crash leaves: "crashpoint" (the reference controller-manager's
	// --crash-after) or "seed" (stop the controller, write the partial state,
	// start it); "auto" is crashpoint on the harness's local cluster and seed
	// elsewhere. Crashpoint on an existing cluster needs the reference
	// deployed there (ReferenceControllers) and a reconfigure hook that
	// passes it flags (hack/hooks/kubeadm).
	CrashMode string
	// ReferenceControllers is namespace/name of the DaemonSet that runs the
	// reference controller-manager on an existing cluster (deploy/), whose
	// pods crashpoint mode watches for the crash.
	ReferenceControllers string
	// ControllerRestartCommand stops and starts the implementation under test
	// on an existing cluster, for seed mode: run as `sh -c COMMAND sh ACTION`
	// (ACTION "stop" or "start" is $1 and $WAS_CONTROLLER_ACTION); it must
	// return once the controllers are stopped or running again.
	ControllerRestartCommand string
	// ReconfigureCommand changes one component's feature gates and
	// runtime-config on an existing cluster (see reconfigure_command.go).
	ReconfigureCommand string
	// FaultCommand makes the faults of the Fault specs on an existing
	// cluster: restarts a control-plane component, stops and starts a node,
	// compacts etcd (see faults.go).
	FaultCommand string
	// HookDir is what a hook's relative path is resolved against: the
	// directory make was called from (hooks.go). Empty: the working directory.
	HookDir string
	// PodImage and PodImagePullPolicy are the image and pull policy of the
	// builders' pods (builder.DefaultImage). Where kubelets really run pods
	// (kind), the image must be on the nodes: hack/e2e-kind.sh passes the
	// pause image preloaded into its node image, with IfNotPresent.
	PodImage           string
	PodImagePullPolicy string
	// ForgerImage is hack/forger's image, present on the nodes (make
	// e2e-kind loads it): the hostile-load install spec runs it as a pod,
	// and skips without it.
	ForgerImage string
	// Timeouts bound every wait; TimeoutScale multiplies them all.
	Timeouts     Timeouts
	TimeoutScale float64
	// Implements is --implements: the KEPs the implementation under test
	// declares, comma-separated ("KEP-6276,KEP-6277"); empty or "auto":
	// found out by the prerequisite check's canaries (ParseImplements).
	Implements string
	// ImplementationMetricsURL is where the implementation's controllers
	// serve Prometheus metrics (an http(s) URL the suite can GET, e.g. a
	// kubectl port-forward). S-P9's metric statefulset_workload_creation_
	// errors_total is read there; empty on an existing cluster skips that
	// check (the local cluster reads its add-on's own endpoint).
	ImplementationMetricsURL string
	// SchedulerMetricsURL is where kube-scheduler serves its Prometheus
	// metrics (http, or https read with the suite's credentials). Empty: the
	// local cluster's scheduler, else kube-system's pods labelled
	// component=kube-scheduler (kubeadm's) through a port-forward.
	SchedulerMetricsURL string
	// AuditLog is the kube-apiserver audit log of an existing cluster, as a
	// file this process can read (hack/e2e-kind.sh mounts kind's from the
	// host), written with pkg/localcluster's DefaultAuditPolicy: the specs
	// that attribute Workload and PodGroup writes read it (AuditLogPath).
	// Empty on an existing cluster: those specs skip.
	AuditLog string
}

// Timeouts are the bounds of the suite's waits. They are generous defaults
// for a shared 2-core machine; a slower environment scales them with
// --timeout-scale rather than editing specs.
type Timeouts struct {
	// ClusterStart bounds each component's and the nodes' readiness.
	ClusterStart time.Duration
	// Namespace bounds creating a spec's namespace (and its default service account).
	Namespace time.Duration
	// PodsBound bounds pods getting bound and running.
	PodsBound time.Duration
	// PodGroupCondition bounds the scheduler writing a PodGroup condition.
	PodGroupCondition time.Duration
	// StaysUnbound is how long a "nothing binds" claim is observed.
	StaysUnbound time.Duration
	// Cleanup bounds a spec's namespace teardown.
	Cleanup time.Duration
	// Poll is the interval between checks.
	Poll time.Duration
	// RetryWindow is the longest interval between an implementation's
	// retries that the suite permits (--retry-window): every "nothing
	// happens" window (StaysUnbound) lasts at least this long plus the time
	// the cluster takes to act, so an implementation that does a forbidden
	// thing on a later retry is caught. The KEPs name no figure ("retries
	// with backoff", "standard exponential backoff"); see DefaultTimeouts.
	// Not scaled: it is the implementation's, not the cluster's speed.
	RetryWindow time.Duration
	// MaxBound caps every Eventually bound (--max-timeout), after
	// --timeout-scale and calibration, so a slow probe cannot stretch a
	// wait without limit. Not scaled.
	MaxBound time.Duration
}

// DefaultTimeouts are the unscaled defaults.
func DefaultTimeouts() Timeouts {
	return Timeouts{
		ClusterStart: 60 * time.Second,
		Namespace:    30 * time.Second,
		// PodsBound bounds every wait for Workloads, PodGroups and pods. 4
		// min: a slower but correct implementation that waits 30 s before
		// each Workload and each PodGroup write (60 s before a gang's pods
		// can be created) and backs off up to 2 min on a retry must fit,
		// with a minute for the apps controllers and the scheduler.
		PodsBound:         4 * time.Minute,
		PodGroupCondition: 60 * time.Second,
		StaysUnbound:      5 * time.Second,
		Cleanup:           90 * time.Second,
		Poll:              200 * time.Millisecond,
		// 30 s: the longest backoff of our reference's workqueues (a
		// client-go rate limiter capped at 30 s). Within such a window the
		// upstream controllers' default limiter (5 ms doubling, to 1000 s)
		// reaches intervals of about 20 s. A vendor whose controllers back
		// off longer between retries must raise --retry-window.
		RetryWindow: 30 * time.Second,
		MaxBound:    10 * time.Minute,
	}
}

// Scaled returns t with every bound multiplied by s (Poll is kept).
func (t Timeouts) Scaled(s float64) Timeouts {
	if s <= 0 || s == 1 {
		return t
	}
	m := func(d time.Duration) time.Duration { return time.Duration(float64(d) * s) }
	return Timeouts{
		ClusterStart: m(t.ClusterStart), Namespace: m(t.Namespace), PodsBound: m(t.PodsBound),
		PodGroupCondition: m(t.PodGroupCondition), StaysUnbound: m(t.StaysUnbound), Cleanup: m(t.Cleanup), Poll: t.Poll,
		RetryWindow: t.RetryWindow, MaxBound: t.MaxBound,
	}
}

// Bounded returns t with every Eventually bound at most MaxBound (0: no
// cap) and the StaysUnbound window at least RetryWindow plus windowFactor ×
// slowest (the measured create-to-bound time; 0 when not measured): a retry
// at the end of the longest permitted interval must have had time to act.
func (t Timeouts) Bounded(slowest time.Duration) Timeouts {
	if t.MaxBound > 0 {
		for _, d := range []*time.Duration{&t.ClusterStart, &t.Namespace, &t.PodsBound, &t.PodGroupCondition, &t.Cleanup} {
			*d = min(*d, t.MaxBound)
		}
	}
	t.StaysUnbound = max(t.StaysUnbound, t.RetryWindow+windowFactor*slowest)
	return t
}

// TestContext is the configuration of this test process.
var TestContext = Config{Timeouts: DefaultTimeouts(), TimeoutScale: 1}

// RegisterFlags binds TestContext to flags; call it from the suite's init.
func RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&TestContext.Kubeconfig, "kubeconfig", "", "kubeconfig of an existing cluster to test; empty starts a local cluster")
	fs.StringVar(&TestContext.OutputDir, "output-dir", envOr("WAS_OUTPUT_DIR", "_output"), "directory with the binaries from hack/build-binaries.sh (env WAS_OUTPUT_DIR)")
	fs.StringVar(&TestContext.Addon, "addon", envOr("WAS_ADDON", DefaultAddon), "local cluster only: descriptor of the implementation to run as an add-on (processes and manifests); empty runs none (env WAS_ADDON)")
	fs.StringVar(&TestContext.KubeVersion, "kube-version", envOr("KUBE_VERSION", cluster.KubeVersion), "Kubernetes version of the local cluster's binaries (env KUBE_VERSION)")
	fs.StringVar(&TestContext.SkewKubeVersion, "skew-kube-version", envOr("SKEW_KUBE_VERSION", cluster.SkewKubeVersion), "older Kubernetes version for the version-skew specs (env SKEW_KUBE_VERSION)")
	fs.StringVar(&TestContext.Artifacts, "artifacts", envOr("ARTIFACTS", "_artifacts"), "directory for logs, failure dumps and reports (env ARTIFACTS)")
	fs.StringVar(&TestContext.TopologyKey, "topology-key", "topology.kubernetes.io/rack", "node label used as the topology domain by placement specs")
	fs.StringVar(&TestContext.CrashMode, "crash-mode", envOr("CRASH_MODE", "auto"), "crash-recovery specs: crashpoint (the reference's --crash-after: the harness's cluster, or an existing one running deploy/ with a reconfigure hook), seed (stop the controllers, seed the partial state, start them: any implementation) or auto (crashpoint on the harness's cluster, seed elsewhere) (env CRASH_MODE)")
	fs.StringVar(&TestContext.ReferenceControllers, "reference-controllers", envOr("REFERENCE_CONTROLLERS", "was-system/was-controller-manager"), "crashpoint mode on an existing cluster: namespace/name of the DaemonSet running the reference controller-manager (env REFERENCE_CONTROLLERS)")
	fs.StringVar(&TestContext.ControllerRestartCommand, "controller-restart-command", os.Getenv("CONTROLLER_RESTART_COMMAND"), "seed mode on an existing cluster: shell command that stops or starts the controllers under test and returns when done; run as `sh -c COMMAND sh ACTION`, ACTION (stop|start, or check before any spec) is $1 and $WAS_CONTROLLER_ACTION (env CONTROLLER_RESTART_COMMAND)")
	fs.StringVar(&TestContext.ReconfigureCommand, "reconfigure-command", os.Getenv("RECONFIGURE_COMMAND"), "an existing cluster: shell command that restarts one component with feature gates and runtime-config, run as `sh -c COMMAND sh COMPONENT FEATURE_GATES RUNTIME_CONFIG`, the three also in $WAS_COMPONENT, $WAS_FEATURE_GATES, $WAS_RUNTIME_CONFIG, and once as `sh -c COMMAND sh check` before any spec (see docs/vendor-guide.md); it lets the Disruptive gate, upgrade and skew specs run (env RECONFIGURE_COMMAND)")
	fs.StringVar(&TestContext.FaultCommand, "fault-command", os.Getenv("FAULT_COMMAND"), "an existing cluster: shell command that makes one fault and returns when done, run as `sh -c COMMAND sh ACTION TARGET`, both also in $WAS_FAULT_ACTION and $WAS_FAULT_TARGET: restart etcd|kube-apiserver|kube-controller-manager|kube-scheduler|control-plane, stop-node NODE, start-node NODE, compact-etcd, and check (before any spec) or check ACTION (before the first spec that needs ACTION) (see docs/vendor-guide.md); it lets the Fault specs run (env FAULT_COMMAND)")
	fs.StringVar(&TestContext.HookDir, "hook-dir", os.Getenv(HookDirEnv), "directory a hook command's relative first word (hack/reconfigure-local.sh) is resolved against; make passes the directory it was called from; empty: the working directory (env "+HookDirEnv+")")
	fs.StringVar(&TestContext.PodImage, "pod-image", envOr("POD_IMAGE", builder.DefaultImage), "image of the suite's pods; on a cluster whose kubelets run pods it must be present on the nodes or pullable (env POD_IMAGE)")
	fs.StringVar(&TestContext.ForgerImage, "forger-image", os.Getenv("FORGER_IMAGE"), "image of hack/forger on the nodes (make e2e-kind loads it): the install spec of the webhook under hostile load runs it as a pod, and skips without it (env FORGER_IMAGE)")
	fs.StringVar(&TestContext.PodImagePullPolicy, "pod-image-pull-policy", os.Getenv("POD_IMAGE_PULL_POLICY"), "imagePullPolicy of the suite's pods: Always, IfNotPresent, Never or empty for the API's default (env POD_IMAGE_PULL_POLICY)")
	fs.Float64Var(&TestContext.TimeoutScale, "timeout-scale", 1, "multiplier for every timeout of the suite")
	fs.DurationVar(&TestContext.Timeouts.RetryWindow, "retry-window", envDuration("RETRY_WINDOW", TestContext.Timeouts.RetryWindow), "longest interval between the implementation's retries the suite permits: every \"nothing happens\" window lasts at least this plus 4 x the measured create-to-bound time; raise it if your controllers back off longer (env RETRY_WINDOW)")
	fs.DurationVar(&TestContext.Timeouts.MaxBound, "max-timeout", envDuration("MAX_TIMEOUT", TestContext.Timeouts.MaxBound), "cap of every Eventually bound after --timeout-scale and calibration; 0: no cap (env MAX_TIMEOUT)")
	fs.StringVar(&TestContext.Implements, "implements", os.Getenv("IMPLEMENTS"), "an existing cluster: the KEPs the implementation under test implements, KEP-6276, KEP-6277 or both comma-separated; a declared KEP that does not answer the prerequisite check's canary stops the suite, a KEP not declared reports NOT-IMPLEMENTED; empty or auto: found out by the canaries (env IMPLEMENTS)")
	fs.StringVar(&TestContext.AuditLog, "audit-log", os.Getenv("AUDIT_LOG"), "an existing cluster: kube-apiserver's audit log as a file readable here, written with the harness's audit policy (Metadata level, Workload and PodGroup writes; make e2e-kind mounts kind's); the specs that attribute writes to their writer read it, and skip without it (env AUDIT_LOG)")
	fs.StringVar(&TestContext.ImplementationMetricsURL, "implementation-metrics-url", os.Getenv("IMPLEMENTATION_METRICS_URL"), "URL of the implementation's controller metrics (Prometheus text), e.g. through kubectl port-forward; S-P9 reads statefulset_workload_creation_errors_total there, and skips that check without it on an existing cluster (env IMPLEMENTATION_METRICS_URL)")
	fs.StringVar(&TestContext.SchedulerMetricsURL, "scheduler-metrics-url", os.Getenv("SCHEDULER_METRICS_URL"), "URL of kube-scheduler's metrics (Prometheus text; https is read with the suite's credentials, the serving certificate unverified); S-I19 reads scheduler_podgroup_schedule_attempts_total there; empty: kube-system's pods labelled component=kube-scheduler through a port-forward to --secure-port (default 10259), and the spec skips where there are none (env SCHEDULER_METRICS_URL)")
}

// envDuration is the duration in the environment variable key, or def when
// it is unset or not a duration.
func envDuration(key string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(key)); err == nil {
		return d
	}
	return def
}

// Resolve makes paths absolute and applies the timeout scale; call it once flags are parsed.
func (c *Config) Resolve() error {
	for _, p := range []*string{&c.OutputDir, &c.Artifacts, &c.Kubeconfig, &c.Addon, &c.AuditLog} {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return err
		}
		*p = abs
	}
	switch corev1.PullPolicy(c.PodImagePullPolicy) {
	case "", corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	default:
		return fmt.Errorf("--pod-image-pull-policy=%q: want Always, IfNotPresent, Never or empty", c.PodImagePullPolicy)
	}
	if c.PodImage != "" {
		builder.DefaultImage = c.PodImage
	}
	builder.DefaultImagePullPolicy = corev1.PullPolicy(c.PodImagePullPolicy)
	c.Timeouts = c.Timeouts.Scaled(c.TimeoutScale).Bounded(0)
	c.TimeoutScale = 1
	return os.MkdirAll(c.Artifacts, 0o755)
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
