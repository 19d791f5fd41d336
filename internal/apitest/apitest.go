// Package apitest runs unit tests against a real kube-apiserver and etcd
// (controller-runtime's envtest), built by this project (`make binaries`)
// and started with the local cluster's feature gates and API versions,
// so that what a test checks is the server's behaviour (validation,
// immutability, preconditions, conflicts), not a fake's idea of it.
//
// One control plane serves a whole test binary: the package's TestMain
// calls Run, the first Start starts it, Run stops it after the tests.
//
//	func TestMain(m *testing.M) { os.Exit(apitest.Run(m)) }
//
//	func TestX(t *testing.T) {
//		api := apitest.Start(t)
//		ns := api.Namespace(t)
//		...
//	}
//
// The binaries are found from TEST_ASSET_KUBE_APISERVER and TEST_ASSET_ETCD
// (envtest's own variables, which `make test` sets), else in this
// repository's _output (where `make binaries` puts them). Without them a
// test skips, saying how to get them; with WAS_REQUIRE_APISERVER=1 (set by
// `make test`) it fails instead, so CI never passes by skipping.
package apitest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/workload-aware/apps-harness/api/cluster"
	"github.com/workload-aware/apps-harness/pkg/localcluster"
)

// Env variables: the binaries, and whether their absence fails.
const (
	EnvAPIServer = "TEST_ASSET_KUBE_APISERVER"
	EnvEtcd      = "TEST_ASSET_ETCD"
	EnvRequire   = "WAS_REQUIRE_APISERVER"
)

// Server is the running control plane, as an admin (system:masters).
type Server struct {
	Config *rest.Config
	Client kubernetes.Interface
}

var (
	mu       sync.Mutex
	inMain   bool // Run is on the stack: someone stops what Start starts
	started  bool
	env      *envtest.Environment
	server   *Server
	startErr error
)

// Run runs the tests and then stops the control plane if a test started it.
func Run(m *testing.M) int {
	mu.Lock()
	inMain = true
	mu.Unlock()
	code := m.Run()
	mu.Lock()
	defer mu.Unlock()
	if env != nil {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "apitest: stopping the control plane: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// Start returns the binary's control plane, starting it on first use. It
// skips the test when the binaries are missing (fails under
// WAS_REQUIRE_APISERVER=1).
func Start(t testing.TB) *Server {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if !inMain {
		t.Fatal("apitest.Start needs the package's TestMain to call apitest.Run, which stops the control plane")
	}
	if !started {
		started = true
		server, startErr = start()
	}
	if startErr != nil {
		if missing, ok := startErr.(binariesMissing); ok && os.Getenv(EnvRequire) != "1" {
			t.Skip(missing.Error())
		}
		t.Fatal(startErr)
	}
	return server
}

// Namespace creates a namespace of a generated name for t, so tests that
// share the server do not see each other's objects. Nothing deletes it: no
// namespace controller runs, and the server goes at the end of the binary.
func (s *Server) Namespace(t testing.TB) string {
	t.Helper()
	ns, err := s.Client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "apitest-"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

type binariesMissing string

func (b binariesMissing) Error() string { return string(b) }

func start() (*Server, error) {
	apiserver, etcd, err := binaries()
	if err != nil {
		return nil, err
	}
	env = &envtest.Environment{
		// Generous: the machine may be busy with a build; a cold start takes seconds.
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	apiServer := env.ControlPlane.GetAPIServer()
	apiServer.Path = apiserver
	// The gates and API versions of `make e2e`'s local cluster: the
	// scheduling.k8s.io objects the controllers write are served.
	apiServer.Configure().
		Set("feature-gates", localcluster.FormatFeatureGates(cluster.KubeFeatureGates())).
		Set("runtime-config", localcluster.FormatRuntimeConfig(cluster.RuntimeConfig()))
	env.ControlPlane.Etcd = &envtest.Etcd{Path: etcd}
	began := time.Now()
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting kube-apiserver %s and etcd %s: %w", apiserver, etcd, err)
	}
	fmt.Fprintf(os.Stderr, "apitest: kube-apiserver and etcd started in %s\n", time.Since(began).Round(100*time.Millisecond))
	// Tests in parallel share it: client-go's default 5 requests/s would pace them, not the server.
	cfg.QPS, cfg.Burst = 500, 1000
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Server{Config: cfg, Client: client}, nil
}

// binaries finds kube-apiserver and etcd: from the env, else from _output.
func binaries() (apiserver, etcd string, err error) {
	apiserver, etcd = os.Getenv(EnvAPIServer), os.Getenv(EnvEtcd)
	if apiserver == "" || etcd == "" {
		root, kube, err := repository()
		if err != nil {
			return "", "", binariesMissing(fmt.Sprintf("no %s/%s set and %v; run `make binaries`, or `make test`, which sets them", EnvAPIServer, EnvEtcd, err))
		}
		if apiserver == "" {
			apiserver = filepath.Join(root, "_output/bin/kube", kube, "kube-apiserver")
		}
		if etcd == "" {
			etcd = filepath.Join(root, "_output/bin/tools/etcd")
		}
	}
	for _, bin := range []string{apiserver, etcd} {
		if info, err := os.Stat(bin); err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
			return "", "", binariesMissing(fmt.Sprintf("%s is not an executable: run `make binaries` (builds kube-apiserver and etcd into _output/bin), or set %s and %s", bin, EnvAPIServer, EnvEtcd))
		}
	}
	return apiserver, etcd, nil
}

// repository returns the module's root and its k8s.io/kubernetes version,
// which names the directory `make binaries` builds into (hack/versions.sh).
func repository() (root, kube string, err error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "k8s.io/kubernetes").Output()
	if err != nil {
		return "", "", fmt.Errorf("the k8s.io/kubernetes version is unknown (go list -m: %v)", err)
	}
	kube = strings.TrimSpace(string(out))
	out, err = exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		return "", "", fmt.Errorf("the module root is unknown (go env GOMOD: %v)", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out))), kube, nil
}
