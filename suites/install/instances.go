package install

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/workload-aware/apps-harness/pkg/localcluster"
)

// instance is a second process of a local cluster component, started by
// the spec beside the cluster's own.
type instance struct {
	pid      int
	identity string
	log      string
}

// startSecondInstance starts the component's binary again with the command
// line the cluster started it with (read from /proc), on another /healthz
// port, waits until it answers /healthz and has logged its identity, and
// stops it when the spec ends.
func startSecondInstance(ctx context.Context, lc *localcluster.Cluster, component localcluster.Component) *instance {
	ginkgo.GinkgoHelper()
	pid := lc.PIDs()[component]
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "the command line of %s", component)
	argv := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
	ports, err := localcluster.FreePorts(1)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	health := fmt.Sprintf("127.0.0.1:%d", ports[0])
	args := argv[1:]
	replaced := false
	for i, a := range args {
		if strings.HasPrefix(a, "--bind-address=") {
			args[i], replaced = "--bind-address="+health, true
		}
	}
	gomega.Expect(replaced).To(gomega.BeTrue(), "%s runs without --bind-address: %v", component, argv)

	logPath := filepath.Join(lc.LogDir(), string(component)+"-second.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	defer logFile.Close()
	cmd := exec.Command(argv[0], args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own process group, killed with the suite however the suite dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	gomega.Expect(cmd.Start()).To(gomega.Succeed(), "starting a second %s", component)
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	ginkgo.DeferCleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})
	ginkgo.By(fmt.Sprintf("second %s: pid %d, /healthz on %s, log %s", component, cmd.Process.Pid, health, logPath))

	in := &instance{pid: cmd.Process.Pid, log: logPath}
	gomega.Eventually(ctx, func() error {
		select {
		case <-exited:
			return gomega.StopTrying("the second instance exited; see " + logPath)
		default:
		}
		resp, err := http.Get("http://" + health + "/healthz")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/healthz: %s %s", resp.Status, body)
		}
		data, _ := os.ReadFile(logPath)
		var ok bool
		if in.identity, ok = identityOf(string(data)); !ok {
			return fmt.Errorf("no identity logged yet")
		}
		return nil
	}).WithTimeout(time.Minute).WithPolling(200*time.Millisecond).Should(gomega.Succeed(), "the second %s is not ready", component)
	return in
}

// writeLog reads the local cluster's audit log of Workload and PodGroup
// writes in one namespace, from where it was when made (or last reset).
type writeLog struct {
	path, namespace string
	offset          int64
}

func newWriteLog(path, namespace string) *writeLog {
	w := &writeLog{path: path, namespace: namespace}
	w.reset()
	return w
}

func (w *writeLog) reset() {
	ginkgo.GinkgoHelper()
	st, err := os.Stat(w.path)
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "the local cluster's audit log")
	w.offset = st.Size()
}

// controllerUser is the prefix of the controllers' service-account users.
const controllerUser = "system:serviceaccount:kube-system:"

// byInstance counts the controllers' writes by the instance that made them:
// the identity in "instance/<identity>" at the end of the User-Agent
// ("untagged" without one).
func (w *writeLog) byInstance() map[string]int {
	ginkgo.GinkgoHelper()
	f, err := os.Open(w.path)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	defer f.Close()
	_, err = f.Seek(w.offset, io.SeekStart)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev struct {
			UserAgent string `json:"userAgent"`
			User      struct {
				Username string `json:"username"`
			} `json:"user"`
			ObjectRef struct {
				Namespace string `json:"namespace"`
			} `json:"objectRef"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.ObjectRef.Namespace != w.namespace || !strings.HasPrefix(ev.User.Username, controllerUser) {
			continue
		}
		id := "untagged"
		if i := strings.LastIndex(ev.UserAgent, " instance/"); i >= 0 {
			id = ev.UserAgent[i+len(" instance/"):]
		}
		out[id]++
	}
	return out
}
