package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/onsi/ginkgo/v2"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/workload-aware/apps-harness/pkg/localcluster"
)

// Own clusters. On the local cluster, with OwnClustersEnv set to a number
// K (hack/e2e.sh sets it from OWN_CLUSTERS), a spec labelled Serial does not
// wait for every other spec and then run alone on the shared cluster: it
// runs beside the other specs, on a local cluster away from the shared one,
// kept by the Ginkgo process it lands on (ownClusterPool). At most K such
// clusters run at once across the run's processes (docs/speed.md has their
// memory and CPU). Against an existing cluster (vendor mode) the variable
// is refused: the hooks address that one cluster, and Serial specs there
// stay serial.
const OwnClustersEnv = "WAS_OWN_CLUSTERS"

// ownClustersWanted is read at tree construction: it decides whether
// Serial carries Ginkgo's Serial decorator.
func ownClustersWanted() bool { return ownClusterSlots() > 0 }

// ownClusterSlots is how many own clusters may run at once across the
// run's processes: OwnClustersEnv's number (0, empty or not a number: own
// clusters off).
func ownClusterSlots() int {
	n, err := strconv.Atoi(os.Getenv(OwnClustersEnv))
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// SerialLabel is the label of Serial specs.
const SerialLabel = "Serial"

// ownClusterEntry is the report entry naming the cluster a spec ran on
// (summary_e2e.md groups specs by it).
const ownClusterEntry = "cluster"

func serialDecorators() []any {
	if ownClustersWanted() {
		return []any{ginkgo.Label(SerialLabel)}
	}
	return []any{ginkgo.Serial, ginkgo.Label(SerialLabel)}
}

// ownClusterInUse names the own cluster the current spec runs on ("" on
// the shared cluster).
var ownClusterInUse string

// AloneOnCluster says whether the current spec has the cluster under test
// to itself: it is Serial, run alone by Ginkgo, or on a cluster of its own.
// Specs that take the whole cluster's capacity or write cluster-scoped
// objects require it.
func AloneOnCluster() bool {
	return ginkgo.CurrentSpecReport().IsSerial || ownClusterInUse != ""
}

// connection is what a process's specs reach the cluster under test by.
type connection struct {
	local      *localcluster.Cluster
	config     *rest.Config
	clientSet  kubernetes.Interface
	intent     *IntentSeam
	kubeconfig string
}

func currentConnection() connection {
	return connection{LocalCluster, restConfig, clientSet, Intent, TestContext.Kubeconfig}
}

func (c connection) use() {
	LocalCluster, restConfig, clientSet, Intent, TestContext.Kubeconfig = c.local, c.config, c.clientSet, c.intent, c.kubeconfig
}

// connect builds the connection to the cluster of kubeconfig.
func connect(kubeconfig string, local *localcluster.Cluster) (connection, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return connection{}, fmt.Errorf("loading kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return connection{}, err
	}
	seam, err := NewIntentSeam(cfg)
	if err != nil {
		return connection{}, fmt.Errorf("detecting how to write scheduling intent: %w", err)
	}
	return connection{local: local, config: cfg, clientSet: cs, intent: seam, kubeconfig: kubeconfig}, nil
}

// ownClusters is this process's cluster for its Serial specs.
var ownClusters = &ownClusterPool{}

// ownClusterPool keeps one cluster per process for the Serial specs that
// land on it: started for the first of them, kept for the next ones (each
// restores what it changed, as on the shared cluster), and replaced after
// a spec that failed, so a component it left broken does not fail the
// next. It holds one of the run's slots while it runs; a process that
// waits for a slot makes the others hand theirs over after their spec.
type ownClusterPool struct {
	mu      sync.Mutex
	ctx     context.Context // ends at teardown: a start under way stops
	cancel  context.CancelFunc
	slots   clusterSlots
	started int
	current *ownCluster // the process's cluster, up, starting or failed; nil when none
}

// ownCluster is a cluster being started; done is closed once it is up or
// has failed. It holds one of the run's slots until it is stopped.
type ownCluster struct {
	name  string
	slot  *os.File
	done  chan struct{}
	c     *localcluster.Cluster
	err   error
	ready time.Duration
	specs int // Serial specs run on it so far
}

// clusterSlots bounds the own clusters running at once across the run's
// processes: a cluster holds an exclusive lock on one of n files in dir for
// its life. The kernel drops the lock when the process dies, however it
// dies, so a slot is never lost. A process waiting for a slot says so with
// a file of its own in dir, so that the holders hand theirs over.
type clusterSlots struct {
	dir string
	n   int
}

// try takes a free slot, or returns nil when every slot is held.
func (s clusterSlots) try() (*os.File, error) {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return nil, err
	}
	for i := range s.n {
		f, err := os.OpenFile(filepath.Join(s.dir, fmt.Sprintf("%d.lock", i)), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			return nil, err
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			return f, nil
		}
		f.Close()
	}
	return nil, nil
}

// wait takes a slot, waiting for one to be freed.
func (s clusterSlots) wait(ctx context.Context) (*os.File, error) {
	f, err := s.try()
	if f != nil || err != nil {
		return f, err
	}
	waiting := filepath.Join(s.dir, fmt.Sprintf("waiting-%d", os.Getpid()))
	if err := os.WriteFile(waiting, nil, 0o644); err != nil {
		return nil, err
	}
	defer os.Remove(waiting)
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
		f, err := s.try()
		if f != nil || err != nil {
			return f, err
		}
	}
}

// othersWaiting says whether another process waits for a slot.
func (s clusterSlots) othersWaiting() bool {
	m, _ := filepath.Glob(filepath.Join(s.dir, "waiting-*"))
	return len(m) > 0
}

// init prepares the pool on this process; the first Serial spec starts
// its cluster. Its teardown is registered with Ginkgo by the caller (it
// also runs on an interrupt).
func (p *ownClusterPool) init() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.slots = clusterSlots{dir: filepath.Join(TestContext.Artifacts, "clusters", ".slots"), n: ownClusterSlots()}
}

// startLocked starts a cluster in the background, under
// $ARTIFACTS/clusters/p<process>-<n>.
func (p *ownClusterPool) startLocked(slot *os.File) *ownCluster {
	p.started++
	oc := &ownCluster{name: fmt.Sprintf("p%d-%d", ginkgo.GinkgoParallelProcess(), p.started), slot: slot, done: make(chan struct{})}
	ctx := p.ctx
	go func() {
		defer close(oc.done)
		t0 := time.Now()
		cfg, err := localClusterConfig()
		if err != nil {
			oc.err = err
			return
		}
		cfg.WorkDir = filepath.Join(TestContext.Artifacts, "clusters", oc.name)
		cfg.Logf = func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, "[cluster %s] "+format+"\n", append([]any{oc.name}, args...)...)
		}
		c, err := localcluster.New(cfg)
		if err != nil {
			oc.err = err
			return
		}
		p.mu.Lock()
		oc.c = c
		p.mu.Unlock()
		oc.err, oc.ready = c.Start(ctx), time.Since(t0)
	}()
	return oc
}

// take returns the process's cluster once it is up, starting one (as soon
// as a slot is free) if there is none.
func (p *ownClusterPool) take(ctx context.Context) (*ownCluster, error) {
	p.mu.Lock()
	if p.ctx == nil {
		p.mu.Unlock()
		return nil, fmt.Errorf("%s is set but the own-cluster pool was not set up (ConnectSuite)", OwnClustersEnv)
	}
	oc := p.current
	p.mu.Unlock()
	if oc == nil {
		slot, err := p.slots.wait(ctx)
		if err != nil {
			return nil, fmt.Errorf("waiting for one of the %d own-cluster slots: %w", p.slots.n, err)
		}
		p.mu.Lock()
		oc = p.startLocked(slot)
		p.current = oc // stopped at teardown even if its start fails half-way
		p.mu.Unlock()
	}
	select {
	case <-oc.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if oc.err != nil {
		p.discard(oc)
		return nil, fmt.Errorf("starting local cluster %s: %w", oc.name, oc.err)
	}
	oc.specs++
	return oc, nil
}

// release ends a spec's use of oc: after a failure, or when another
// process waits for a slot, oc is stopped (its logs kept) and the next
// Serial spec gets a new one; otherwise it stays up for that spec.
func (p *ownClusterPool) release(oc *ownCluster, failed bool) {
	if failed || p.slots.othersWaiting() {
		p.discard(oc)
	}
}

// discard stops oc, frees its slot, and forgets it.
func (p *ownClusterPool) discard(oc *ownCluster) {
	p.stop(oc) // its work directory stays, logs included, as the shared cluster's does
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.current == oc {
		p.current = nil
	}
}

// stop stops oc's components and frees its slot.
func (p *ownClusterPool) stop(oc *ownCluster) {
	p.mu.Lock()
	c := oc.c
	p.mu.Unlock()
	if c != nil {
		if err := c.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "[cluster %s] stopping: %v\n", oc.name, err)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if oc.slot != nil {
		oc.slot.Close()
		oc.slot = nil
	}
}

// teardown ends a start under way and stops every cluster of the process.
func (p *ownClusterPool) teardown() {
	p.mu.Lock()
	if p.cancel == nil {
		p.mu.Unlock()
		return
	}
	p.cancel()
	oc := p.current
	p.current = nil
	p.mu.Unlock()
	if oc != nil {
		<-oc.done
		p.stop(oc)
	}
}

// setUpOwnClusters runs on every process at suite start (ConnectSuite).
func setUpOwnClusters() {
	if !ownClustersWanted() {
		return
	}
	if LocalCluster == nil {
		ginkgo.Fail(fmt.Sprintf("%s=%s runs Serial specs on local clusters of their own, beside the shared local cluster; with --kubeconfig there is none: unset it (on an existing cluster Serial specs run one at a time; hack/e2e.sh does not set it there)", OwnClustersEnv, os.Getenv(OwnClustersEnv)))
	}
	ownClusters.init()
	ginkgo.DeferCleanup(ownClusters.teardown)
}

// onOwnCluster moves the current spec, if it is Serial and own clusters
// are on, to a cluster of its own until it ends. It runs before any other
// BeforeEach of the spec (it is registered at the top level), so the
// spec's Framework, namespace and helpers all see that cluster.
func onOwnCluster(ctx context.Context) {
	if !ownClustersWanted() || !slices.Contains(ginkgo.CurrentSpecReport().Labels(), SerialLabel) {
		return
	}
	t0 := time.Now()
	oc, err := ownClusters.take(ctx)
	if err != nil {
		ginkgo.Fail(err.Error())
	}
	conn, err := connect(oc.c.KubeconfigPath(), oc.c)
	if err != nil {
		ownClusters.discard(oc)
		ginkgo.Fail(fmt.Sprintf("connecting to local cluster %s: %v", oc.name, err))
	}
	shared := currentConnection()
	conn.use()
	ownClusterInUse = oc.name
	ginkgo.AddReportEntry(ownClusterEntry, oc.name, ginkgo.ReportEntryVisibilityNever)
	ginkgo.GinkgoWriter.Printf("On local cluster %s, away from the shared one (%s; its Serial spec number %d; up in %s, waited %s)\n", oc.name, oc.c.Config().WorkDir,
		oc.specs, oc.ready.Round(100*time.Millisecond), time.Since(t0).Round(100*time.Millisecond))
	ginkgo.DeferCleanup(func() {
		ownClusterInUse = ""
		shared.use()
		ownClusters.release(oc, ginkgo.CurrentSpecReport().Failed())
	})
}
