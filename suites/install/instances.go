package install

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/pkg/localcluster"
)

// instance is a second instance of the reference controller-manager,
// started by the spec beside the installed one: a process of the local
// cluster, or a bare Pod on an existing cluster.
type instance struct {
	identity string
	// where says where it runs and logs, for messages.
	where string
	// running fails once the instance no longer runs.
	running func(context.Context) error
}

// startSecondInstance starts a second instance of in with the flags in
// runs with now (so the same Lease and timings), waits until it is ready
// and has logged its Lease identity, and stops it when the spec ends.
func startSecondInstance(ctx context.Context, f *framework.Framework, in *installed) *instance {
	ginkgo.GinkgoHelper()
	if in.local != nil {
		return startLocalInstance(ctx, in.local, in.component)
	}
	return startStandbyPod(ctx, f, in)
}

// startLocalInstance starts the component's binary again with the command
// line the cluster started it with (read from /proc), on another /healthz
// port, waits until it answers /healthz and has logged its identity, and
// stops it when the spec ends.
func startLocalInstance(ctx context.Context, lc *localcluster.Cluster, component localcluster.Component) *instance {
	ginkgo.GinkgoHelper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", lc.PIDs()[component]))
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
	pid := cmd.Process.Pid
	ginkgo.By(fmt.Sprintf("second %s: pid %d, /healthz on %s, log %s", component, pid, health, logPath))

	in := &instance{where: fmt.Sprintf("pid %d, log %s", pid, logPath), running: func(context.Context) error {
		select {
		case <-exited:
			return fmt.Errorf("the second %s (pid %d) exited; see %s", component, pid, logPath)
		default:
			return nil
		}
	}}
	gomega.Eventually(ctx, func() error {
		if err := in.running(ctx); err != nil {
			return gomega.StopTrying(err.Error())
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

// standbyDeadline ends the standby Pod by itself should the spec's cleanup
// never run (an interrupted suite): far longer than the spec takes.
const standbyDeadline = 15 * time.Minute

// startStandbyPod runs a second instance on an existing cluster: a bare Pod
// beside the DaemonSet's, of the DaemonSet's current pod template (its
// service account, args as reconfigured, node selector, tolerations, the
// crash-point emptyDir), whose selector labels get other values so that the
// DaemonSet does not adopt it. It is deleted when the spec ends; it never
// restarts (restartPolicy Never) and ends by itself after standbyDeadline.
// deploy/'s NetworkPolicies select every pod of the namespace: it reaches
// the API server (and nothing else) as the DaemonSet's pods do.
func startStandbyPod(ctx context.Context, f *framework.Framework, in *installed) *instance {
	ginkgo.GinkgoHelper()
	pods := f.ClientSet.CoreV1().Pods(in.daemonSet.Namespace)
	ds, err := f.ClientSet.AppsV1().DaemonSets(in.daemonSet.Namespace).Get(ctx, in.daemonSet.Name, metav1.GetOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "reading DaemonSet %s/%s", in.daemonSet.Namespace, in.daemonSet.Name)
	pod := standbyPod(ds)
	created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "creating a standby Pod of DaemonSet %s/%s", ds.Namespace, ds.Name)
	name := created.Name
	ginkgo.DeferCleanup(func(ctx context.Context) {
		ginkgo.By("deleting the standby Pod " + name)
		err := pods.Delete(ctx, name, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), "deleting the standby Pod %s", name)
		// Gone before the DaemonSet is restored: its restore waits for one
		// of its own pods to lead.
		gomega.Eventually(ctx, func() error {
			_, err := pods.Get(ctx, name, metav1.GetOptions{})
			return err
		}).WithTimeout(f.Timeouts.Cleanup).WithPolling(time.Second).Should(gomega.Satisfy(apierrors.IsNotFound), "the standby Pod %s is not gone", name)
	})
	ctr := pod.Spec.Containers[0].Name
	standby := &instance{where: fmt.Sprintf("Pod %s/%s (kubectl logs)", ds.Namespace, name), running: func(ctx context.Context) error {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("the standby Pod %s is %s: %s", name, p.Status.Phase, p.Status.Message)
		}
		return nil
	}}
	ginkgo.By(fmt.Sprintf("standby %s: Pod %s/%s, args %v", in.component, ds.Namespace, name, pod.Spec.Containers[0].Args))
	gomega.Eventually(ctx, func() error {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			return gomega.StopTrying(fmt.Sprintf("the standby Pod %s ended: %s %s %v", name, p.Status.Phase, p.Status.Message, p.Status.ContainerStatuses))
		}
		if !podReady(p) {
			return fmt.Errorf("the standby Pod %s is not ready: %s %v", name, p.Status.Phase, p.Status.Conditions)
		}
		raw, err := pods.GetLogs(name, &corev1.PodLogOptions{Container: ctr}).DoRaw(ctx)
		if err != nil {
			return err
		}
		var ok bool
		if standby.identity, ok = identityOf(string(raw)); !ok {
			return fmt.Errorf("the standby Pod %s has logged no identity yet", name)
		}
		return nil
	}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(gomega.Succeed(), "the standby %s is not ready", in.component)
	return standby
}

// standbyPod is a bare Pod of ds's pod template that ds does not adopt.
func standbyPod(ds *appsv1.DaemonSet) *corev1.Pod {
	tmpl := ds.Spec.Template.DeepCopy()
	labels := maps.Clone(tmpl.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	for k, v := range ds.Spec.Selector.MatchLabels {
		labels[k] = v + "-standby"
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: ds.Name + "-standby-", Namespace: ds.Namespace, Labels: labels, Annotations: tmpl.Annotations},
		Spec:       tmpl.Spec,
	}
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	pod.Spec.ActiveDeadlineSeconds = ptr.To(int64(standbyDeadline / time.Second))
	return pod
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// writeLog reads kube-apiserver's audit log (framework.AuditLogPath) of
// Workload and PodGroup writes in one namespace, from where it was when
// made (or last reset).
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
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "kube-apiserver's audit log")
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
