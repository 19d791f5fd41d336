// Command was-controller-manager is the reference implementation of KEP-6276
// (and, with later issues, KEP-6277): the upstream Deployment and ReplicaSet
// controllers of k8s.io/kubernetes v1.37.2, imported as libraries and run
// unchanged, with the KEP's Workload and PodGroup handling layered in at the
// seams the upstream code offers (see controllers/deployment). It can also
// serve the KEP's admission rules as a validating webhook.
//
// The harness runs it twice from one binary: once as the controller side
// (in place of kube-controller-manager's deployment and replicaset
// controllers) and once as the admission side (--controllers= with
// --webhook-bind-address), so each side's feature gates can differ, exactly
// as kube-controller-manager's and kube-apiserver's can.
package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	v1core "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/record"
	componentbaseconfig "k8s.io/component-base/config"
	componentbaseoptions "k8s.io/component-base/config/options"
	"k8s.io/component-base/logs"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/controller-manager/pkg/clientbuilder"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/controller"
	upstreamdeployment "k8s.io/kubernetes/pkg/controller/deployment"
	"k8s.io/kubernetes/pkg/controller/replicaset"
	upstreamstatefulset "k8s.io/kubernetes/pkg/controller/statefulset"
	consistencyutil "k8s.io/kubernetes/pkg/controller/util/consistency"

	"github.com/workload-aware/apps-harness/controllers/admission"
	"github.com/workload-aware/apps-harness/controllers/cascade"
	"github.com/workload-aware/apps-harness/controllers/crashpoint"
	wasdeployment "github.com/workload-aware/apps-harness/controllers/deployment"
	"github.com/workload-aware/apps-harness/controllers/features"
	"github.com/workload-aware/apps-harness/controllers/handback"
	"github.com/workload-aware/apps-harness/controllers/schedulingapi"
	wasstatefulset "github.com/workload-aware/apps-harness/controllers/statefulset"
)

// knownControllers are the names --controllers accepts.
var knownControllers = []string{"deployment", "replicaset", "statefulset"}

type options struct {
	kubeconfig         string
	kubeAPIQPS         float32
	kubeAPIBurst       int
	controllers        []string
	bindAddress        string
	webhookBindAddress string
	pprofAddress       string
	tlsCertFile        string
	tlsKeyFile         string
	clientCAFile       string
	shutdownDelay      time.Duration
	clientAllowedNames []string
	useSACredentials   bool
	deploymentWorkers  int
	replicaSetWorkers  int
	statefulSetWorkers int
	crashAfter         string
	leaderElection     componentbaseconfig.LeaderElectionConfiguration
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == probeCommand {
		os.Exit(runProbe(os.Args[2:]))
	}
	o := options{leaderElection: defaultLeaderElection()}
	fs := pflag.NewFlagSet("was-controller-manager", pflag.ExitOnError)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (its identity bootstraps the per-controller service-account clients)")
	// As kube-controller-manager's flags of the same names: each controller's
	// client (one per service account) has this rate limit of its own.
	fs.Float32Var(&o.kubeAPIQPS, "kube-api-qps", 50, "QPS of each client to the API server (each controller's service-account client has a limit of its own, as in kube-controller-manager)")
	fs.IntVar(&o.kubeAPIBurst, "kube-api-burst", 100, "burst of each client to the API server")
	fs.StringSliceVar(&o.controllers, "controllers", knownControllers, fmt.Sprintf("controllers to run, of %v; empty runs none (admission only)", knownControllers))
	fs.StringVar(&o.bindAddress, "bind-address", "127.0.0.1:10290", "address of the plain HTTP server for /healthz and /metrics (keep it on loopback: `was-controller-manager probe` checks /healthz from inside the pod)")
	fs.StringVar(&o.webhookBindAddress, "webhook-bind-address", "", "address of the HTTPS validating webhook; empty disables it")
	fs.StringVar(&o.pprofAddress, "pprof-address", "", "address serving net/http/pprof under /debug/pprof/ (for profiling, e.g. 127.0.0.1:6060; keep it on loopback: profiles are unauthenticated); empty disables it")
	fs.StringVar(&o.tlsCertFile, "tls-cert-file", "", "serving certificate of the webhook (reloaded when the file changes)")
	fs.StringVar(&o.tlsKeyFile, "tls-private-key-file", "", "serving key of the webhook")
	fs.StringVar(&o.clientCAFile, "client-ca-file", "", "CA bundle the webhook verifies its clients' certificates against (reloaded when the file changes): only a client with a certificate of this CA, for client authentication, is served; set the API server up to present one (docs/install.md); empty serves any client, and says so in the log")
	fs.DurationVar(&o.shutdownDelay, "shutdown-delay", 0, "once asked to stop, how long the webhook serves on (closing each connection after its response) before it stops listening: long enough for the Service's endpoints and kube-proxy to send the API server to another pod, so a rollout rejects no request")
	fs.StringSliceVar(&o.clientAllowedNames, "client-allowed-names", nil, "common names of the client certificates the webhook serves (with --client-ca-file); empty accepts any certificate of that CA")
	fs.BoolVar(&o.useSACredentials, "use-service-account-credentials", true, "run each controller with its own kube-system service account, as kube-controller-manager does")
	fs.IntVar(&o.deploymentWorkers, "concurrent-deployment-syncs", 5, "Deployment controller workers")
	fs.IntVar(&o.replicaSetWorkers, "concurrent-replicaset-syncs", 5, "ReplicaSet controller workers")
	fs.IntVar(&o.statefulSetWorkers, "concurrent-statefulset-syncs", 5, "StatefulSet controller workers")
	fs.StringVar(&o.crashAfter, "crash-after", "", fmt.Sprintf("testing only: exit with status %d right after this step, as \"<point>\" or \"<point>@<namespace>\"; points: %v, or write/<n> (after the n-th object write in the namespace)", crashpoint.ExitCode, crashpoint.Known))
	componentbaseoptions.BindLeaderElectionFlags(&o.leaderElection, fs) // only the controllers are elected; the webhook serves on every replica
	selfSigned.addFlags(fs)                                             // selfsigned.go: the webhook's certificate without cert-manager (deploy/)
	utilfeature.DefaultMutableFeatureGate.AddFlag(fs)
	logs.AddFlags(fs)
	_ = fs.Parse(os.Args[1:])
	logs.InitLogs()
	defer logs.FlushLogs()

	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer cancel()
	if err := run(ctx, o); err != nil {
		klog.ErrorS(err, "was-controller-manager failed")
		logs.FlushLogs()
		os.Exit(1)
	}
}

func (o *options) validate() error {
	if errs := utilfeature.DefaultMutableFeatureGate.Validate(); len(errs) > 0 {
		return errors.Join(errs...)
	}
	if o.kubeAPIQPS <= 0 || o.kubeAPIBurst < 1 {
		return fmt.Errorf("--kube-api-qps %v and --kube-api-burst %d: want a QPS above 0 and a burst of at least 1", o.kubeAPIQPS, o.kubeAPIBurst)
	}
	for _, c := range o.controllers {
		if !slices.Contains(knownControllers, c) {
			return fmt.Errorf("--controllers: unknown controller %q; known: %v", c, knownControllers)
		}
	}
	if err := crashpoint.Arm(o.crashAfter); err != nil {
		return fmt.Errorf("--crash-after: %w", err)
	}
	if err := validateLeaderElection(o.leaderElection); err != nil {
		return err
	}
	if o.webhookBindAddress == "" {
		return nil
	}
	if len(o.clientAllowedNames) > 0 && o.clientCAFile == "" {
		return fmt.Errorf("--client-allowed-names needs --client-ca-file")
	}
	if selfSigned.enabled() {
		if o.tlsCertFile != "" || o.tlsKeyFile != "" {
			return fmt.Errorf("--self-signed-cert-secret and --tls-cert-file/--tls-private-key-file exclude each other")
		}
		return selfSigned.validate()
	}
	if o.tlsCertFile == "" || o.tlsKeyFile == "" {
		return fmt.Errorf("--webhook-bind-address needs --tls-cert-file and --tls-private-key-file, or --self-signed-cert-secret")
	}
	return nil
}

func run(ctx context.Context, o options) error {
	logger := klog.FromContext(ctx)
	if err := o.validate(); err != nil {
		return err
	}
	if crashpoint.ReachedBefore(o.crashAfter) {
		// The kubelet restarted this container after its armed crash: stay
		// down, as a crashed process does, until started without the point.
		logger.Info("Reached --crash-after in an earlier run of this container: running no controller until restarted without it", "crashAfter", o.crashAfter)
		o.controllers = nil
	}
	identity, err := instanceIdentity()
	if err != nil {
		return err
	}
	cfg, root, err := clients(o, identity)
	if err != nil {
		return err
	}
	logger.Info("Starting", "controllers", o.controllers, "webhook", o.webhookBindAddress, "identity", identity, "leaderElect", o.leaderElection.LeaderElect,
		string(features.WorkloadWithDeployment), features.Enabled(features.WorkloadWithDeployment),
		string(features.WorkloadWithStatefulSet), features.Enabled(features.WorkloadWithStatefulSet))
	wasdeployment.RegisterMetrics()
	wasstatefulset.RegisterMetrics()

	health := newHealthChecks()
	mux := http.NewServeMux()
	mux.Handle("/metrics", legacyregistry.Handler())
	// /healthz is the readiness; /livez the liveness (the leader-election
	// watchdog only: health.go).
	mux.Handle("/healthz", health)
	mux.Handle("/livez", health.Livez())
	serveErr := make(chan error, 5) // the three servers, the election, the leader's start
	go func() { serveErr <- serve(ctx, newServer(o.bindAddress, mux, nil)) }()
	if o.pprofAddress != "" {
		go func() { serveErr <- serve(ctx, newPprofServer(o.pprofAddress)) }()
	}

	webhookStopped := make(chan struct{})
	if o.webhookBindAddress != "" {
		if err := startWebhook(ctx, o, root, health, serveErr, webhookStopped); err != nil {
			return err
		}
	} else {
		close(webhookStopped)
	}
	var stopped <-chan struct{} // closed once the controllers stopped and the Lease is released
	if len(o.controllers) > 0 {
		var err error
		if stopped, err = runControllers(ctx, o, cfg, root, identity, health, serveErr); err != nil {
			return err
		}
	}
	health.started()
	logger.Info("Ready")
	select {
	case <-ctx.Done():
		// The webhook answers what it was sent, and what arrives during
		// --shutdown-delay, before the process ends.
		select {
		case <-webhookStopped:
		case <-time.After(o.shutdownDelay + shutdownTimeout + time.Second):
		}
		if stopped != nil {
			// SIGTERM: the leader stops its controllers, then releases the
			// Lease, so a standby takes over now rather than after the lease
			// duration. Bounded by the release's deadline (leaderelection.go).
			logger.Info("Stopping: the controllers, then the Lease")
			<-stopped
		}
		return nil
	case err := <-serveErr:
		return err
	}
}

// clients builds the rest config (tagged with this instance's identity, so
// its writes can be told apart in audit logs) and the clientset of the process.
func clients(o options, identity string) (*rest.Config, kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return nil, nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = o.kubeAPIQPS, o.kubeAPIBurst
	cfg.Wrap(tagUserAgent(identity))
	cfg.Wrap(crashpoint.WrapTransport) // counts writes for a --crash-after=write/<n>; a no-op otherwise
	root, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	return cfg, root, nil
}

// startWebhook serves the admission webhook on --webhook-bind-address with a
// certificate that is renewed in place; its server error goes to serveErr,
// and stopped is closed once it has stopped serving.
func startWebhook(ctx context.Context, o options, root kubernetes.Interface, health *healthChecks, serveErr chan<- error, stopped chan<- struct{}) error {
	logger := klog.FromContext(ctx)
	wh := http.NewServeMux()
	var draining atomic.Bool
	srv := newWebhookServer(o.webhookBindAddress, closeWhenDraining(wh, &draining))
	source, err := webhookCertificate(ctx, o, root, func() { dropIdleConnections(srv) })
	if err != nil {
		return err
	}
	srv.TLSConfig = webhookTLSConfig(source)
	if o.clientCAFile != "" {
		auth, err := newClientAuth(o.clientCAFile, o.clientAllowedNames)
		if err != nil {
			return err
		}
		auth.run(ctx)
		auth.configure(srv.TLSConfig)
		logger.Info("The webhook serves only clients with a certificate of --client-ca-file", "clientCAFile", o.clientCAFile, "allowedNames", o.clientAllowedNames)
	} else {
		logger.Info("WARNING: the webhook serves any client: without --client-ca-file, anyone who can reach its port can send it reviews (docs/install.md)")
	}
	health.add("serving-certificate", source.Check)

	// Scale reviews are answered from this cache, not one API request each
	// (admission.DeploymentReader), trimmed to what they read.
	factory := informers.NewSharedInformerFactoryWithOptions(root, 12*time.Hour, informers.WithTransform(admission.TrimForScaleReviews))
	deployments := factory.Apps().V1().Deployments()
	reader := &admission.DeploymentReader{Cache: deployments.Lister(), Client: root.AppsV1(), Timeout: scaleReadTimeout}
	cacheSynced := deployments.Informer().HasSynced
	factory.Start(ctx.Done())
	health.add("deployment-cache", func() error {
		if !cacheSynced() {
			return errors.New("the Deployment cache of scale reviews has not synced")
		}
		return nil
	})
	wh.Handle(admission.Path, &admission.Handler{
		GateEnabled:            func() bool { return features.Enabled(features.WorkloadWithDeployment) },
		StatefulSetGateEnabled: func() bool { return features.Enabled(features.WorkloadWithStatefulSet) },
		GetDeployment:          reader.Get,
	})
	go func() {
		defer close(stopped)
		serveErr <- serve(drainAfter(ctx, srv, &draining, o.shutdownDelay), srv)
	}()
	return nil
}

// drainAfter returns a context that ends delay after ctx does. In between,
// srv serves on, but closes each connection after its response (draining
// set: closeWhenDraining): a client's connection through the Service stays
// with this pod as long as it lives, so the API server must open new ones,
// which the Service's updated endpoints send to a pod that stays. Idle
// connections are not cut at once: a client may be sending on one just then
// (an EOF the API server does not retry); each is closed after its next
// response, or at the end of the delay.
func drainAfter(ctx context.Context, srv *http.Server, draining *atomic.Bool, delay time.Duration) context.Context {
	serving, stop := context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		<-ctx.Done()
		draining.Store(true)
		if delay > 0 {
			klog.FromContext(ctx).Info("Stopping: the webhook serves on, closing each connection after its response, for --shutdown-delay", "shutdownDelay", delay)
			time.Sleep(delay)
		}
		stop()
	}()
	return serving
}

// closeWhenDraining asks the server to close each connection after its
// response once draining is set.
func closeWhenDraining(h http.Handler, draining *atomic.Bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if draining.Load() {
			w.Header().Set("Connection", "close")
		}
		h.ServeHTTP(w, r)
	})
}

// scaleReadTimeout bounds a scale review's live read of its Deployment:
// well under the registration's timeoutSeconds (5), so the review is
// answered (denied, fail closed) before the API server gives up on it.
const scaleReadTimeout = 2 * time.Second

// runControllers starts the controllers now, or, with leader election, in
// the Lease holder only. Health reports "informers not synced" only for an
// instance that should be running them: a standby is ready. With leader
// election, the channel it returns is closed once the election has ended
// (after ctx): the controllers stopped, then the Lease released.
func runControllers(ctx context.Context, o options, cfg *rest.Config, root kubernetes.Interface, identity string, health *healthChecks, serveErr chan<- error) (<-chan struct{}, error) {
	var synced atomic.Bool
	start := func(ctx context.Context) (wait func(), err error) {
		if wait, err = startControllers(ctx, o, cfg, root, identity); err != nil {
			return nil, err
		}
		synced.Store(true)
		return wait, nil
	}
	if !o.leaderElection.LeaderElect {
		health.add("controllers", func() error {
			if !synced.Load() {
				return errors.New("informers not synced")
			}
			return nil
		})
		_, err := start(ctx)
		return nil, err
	}
	le := &leaderElection{config: o.leaderElection, identity: identity, watchdog: leaderelection.NewLeaderHealthzAdaptor(leaderHealthTimeout)}
	var leading atomic.Bool
	health.add("controllers", func() error {
		if leading.Load() && !synced.Load() {
			return errors.New("leading, informers not synced")
		}
		return nil
	})
	// The watchdog: a leader that has not renewed its Lease for
	// leaderHealthTimeout past the renew deadline is stuck; a restart cures it.
	health.addLiveness("leader-election", le.check)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		serveErr <- le.run(ctx, cfg, func(ctx context.Context) {
			leading.Store(true)
			wait, err := start(ctx)
			if err != nil {
				if ctx.Err() == nil {
					serveErr <- err
				}
				return
			}
			wait() // returns once every controller's workers have returned, after ctx
		})
	}()
	return stopped, nil
}

func webhookCertificate(ctx context.Context, o options, root kubernetes.Interface, onRenewed func()) (certificateSource, error) {
	if !selfSigned.enabled() {
		return newFileCertificate(o.tlsCertFile, o.tlsKeyFile)
	}
	ns, _, _ := strings.Cut(selfSigned.secret, "/")
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartStructuredLogging(3)
	broadcaster.StartRecordingToSink(&v1core.EventSinkImpl{Interface: root.CoreV1().Events(ns)})
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "was-webhook"})
	cert := newSelfSignedCertificate(selfSigned, root, recorder)
	cert.onRenewed = onRenewed
	return cert, cert.start(ctx)
}

// startControllers builds the upstream controllers over wrapped clients and
// starts them once their informers have synced. The func it returns waits,
// after ctx ends, until every controller's Run has returned (each waits for
// its workers), so nothing they write is in flight any more.
func startControllers(ctx context.Context, o options, cfg *rest.Config, root kubernetes.Interface, identity string) (func(), error) {
	// Bootstraps from the root identity: a token for each controller's
	// kube-system service account (which the manifests create; the root
	// identity may only read these three and request their tokens).
	anonymous := rest.AnonymousClientConfig(cfg)
	anonymous.Wrap(tagUserAgent(identity))
	anonymous.Wrap(crashpoint.WrapTransport)
	builder := clientbuilder.NewDynamicClientBuilder(anonymous, root.CoreV1(), "kube-system")
	clientFor := func(name string) (kubernetes.Interface, error) {
		if !o.useSACredentials {
			return root, nil
		}
		return builder.Client(name)
	}
	deploymentClient, err := clientFor("deployment-controller")
	if err != nil {
		return nil, fmt.Errorf("client of deployment-controller: %w", err)
	}
	replicaSetClient, err := clientFor("replicaset-controller")
	if err != nil {
		return nil, fmt.Errorf("client of replicaset-controller: %w", err)
	}

	factory := informers.NewSharedInformerFactory(root, 12*time.Hour)
	dInf, rsInf, podInf := factory.Apps().V1().Deployments(), factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods()
	sched := schedulingapi.New(root, 0)

	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartStructuredLogging(3)
	broadcaster.StartRecordingToSink(&v1core.EventSinkImpl{Interface: deploymentClient.CoreV1().Events("")})
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "was-controller-manager"})

	// The upstream Deployment controller drops a key after 15 failed syncs;
	// the tap lets the reference hand a Deployment back to it (handback).
	var upstreamDeployments handback.Tap
	r := wasdeployment.NewReconciler(wasdeployment.Options{
		DeploymentClient: deploymentClient, ReplicaSetClient: replicaSetClient,
		Deployments: dInf.Lister(), Scheduling: sched, Recorder: recorder, Gates: wasdeployment.DefaultGates(),
		HandBack: func(d *appsv1.Deployment) { upstreamDeployments.Resync(d) },
	})
	workers := wasdeployment.NewWorkers(r, dInf.Informer(), rsInf.Informer(), rsInf.Lister())
	setInf := factory.Apps().V1().StatefulSets()
	finisher := cascade.New(cascade.Options{
		Client: replicaSetClient, Pods: podInf.Lister(), Scheduling: sched,
		ReplicaSets: rsInf.Informer(), RSLister: rsInf.Lister(),
		StatefulSets: setInf.Informer(), SetLister: setInf.Lister(),
	})

	var runs []func()
	if slices.Contains(o.controllers, "deployment") {
		dc, err := upstreamdeployment.NewDeploymentController(ctx, upstreamDeployments.Deployments(dInf), rsInf, podInf, r.DeploymentControllerClient(deploymentClient))
		if err != nil {
			return nil, err
		}
		runs = append(runs, func() { dc.Run(ctx, o.deploymentWorkers) })
	}
	if slices.Contains(o.controllers, "replicaset") {
		runs = append(runs, replicaSetRun(ctx, o, r, replicaSetClient, rsInf, podInf))
	}
	if slices.Contains(o.controllers, "statefulset") {
		setClient, err := clientFor("statefulset-controller")
		if err != nil {
			return nil, fmt.Errorf("client of statefulset-controller: %w", err)
		}
		runs = append(runs, statefulSetRuns(ctx, o, setClient, factory, sched)...)
	}

	factory.Start(ctx.Done())
	sched.Start(ctx)
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, fmt.Errorf("informer for %v did not sync", typ)
		}
	}
	var wg sync.WaitGroup
	for _, run := range runs {
		wg.Go(run)
	}
	wg.Go(func() { workers.Run(ctx, 2) })
	wg.Go(func() { finisher.Run(ctx) })
	return wg.Wait, nil
}

// replicaSetRun builds the upstream ReplicaSet controller, imported as a
// library, around the reference's pod control (which stamps each pod's
// scheduling group) and returns its run function.
func replicaSetRun(ctx context.Context, o options, r *wasdeployment.Reconciler, replicaSetClient kubernetes.Interface,
	rsInf appsinformers.ReplicaSetInformer, podInf coreinformers.PodInformer) func() {
	rsClient := r.ReplicaSetControllerClient(replicaSetClient)
	rsBroadcaster := record.NewBroadcaster(record.WithContext(ctx))
	rsc := replicaset.NewBaseController(klog.FromContext(ctx), rsInf, podInf, rsClient, replicaset.BurstReplicas,
		appsv1.SchemeGroupVersion.WithKind("ReplicaSet"), "replicaset_controller", "replicaset",
		r.PodControl(controller.RealPodControl{
			KubeClient: rsClient,
			Recorder:   rsBroadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "replicaset-controller"}),
		}),
		rsBroadcaster, replicaset.DefaultReplicaSetControllerFeatures(), consistencyutil.NewNoopConsistencyStore())
	return func() { rsc.Run(ctx, o.replicaSetWorkers) }
}

// statefulSetRuns builds the upstream StatefulSet controller around the
// reference's client (which keeps the Workload and PodGroup ahead of the pods)
// plus the worker that syncs the scheduling objects, and returns both run functions.
func statefulSetRuns(ctx context.Context, o options, setClient kubernetes.Interface, factory informers.SharedInformerFactory,
	sched *schedulingapi.Informers) []func() {
	setInf, podInf := factory.Apps().V1().StatefulSets(), factory.Core().V1().Pods()
	setBroadcaster := record.NewBroadcaster(record.WithContext(ctx))
	setBroadcaster.StartStructuredLogging(3)
	setBroadcaster.StartRecordingToSink(&v1core.EventSinkImpl{Interface: setClient.CoreV1().Events("")})
	sr := wasstatefulset.NewReconciler(wasstatefulset.Options{
		Client: setClient, StatefulSets: setInf.Lister(), Pods: podInf.Lister(), PodIndexer: podInf.Informer().GetIndexer(), Scheduling: sched,
		Recorder: setBroadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "statefulset-controller"}),
		Gates:    wasstatefulset.DefaultGates(),
	})
	ssc := upstreamstatefulset.NewStatefulSetController(ctx, podInf, setInf, factory.Core().V1().PersistentVolumeClaims(),
		factory.Apps().V1().ControllerRevisions(), sr.ControllerClient(setClient))
	syncWorker := wasstatefulset.NewSyncWorker(sr, setInf.Informer())
	return []func(){func() { ssc.Run(ctx, o.statefulSetWorkers) }, func() { syncWorker.Run(ctx, 1) }}
}
