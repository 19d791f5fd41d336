package framework

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

// PortForward forwards a free port of 127.0.0.1 to port of pod through the
// API server, as kubectl port-forward does (WebSocket, else SPDY), until
// the spec ends, and returns the local address. Each connection to it is a
// new connection to the pod's port, from inside the pod's network (a
// hostNetwork pod's: the node's, so a component bound to the node's
// loopback is reached too).
func PortForward(ctx context.Context, pod *corev1.Pod, port int32) string {
	ginkgo.GinkgoHelper()
	config := RESTConfig()
	u := ClientSet().CoreV1().RESTClient().Post().Resource("pods").Namespace(pod.Namespace).Name(pod.Name).SubResource("portforward").URL()
	transport, upgrader, err := spdy.RoundTripperFor(config)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	websocket, err := portforward.NewSPDYOverWebsocketDialer(u, config)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	dialer := portforward.NewFallbackDialer(websocket, spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u),
		func(err error) bool { return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err) })

	ctx, cancel := context.WithCancel(ctx)
	ready := make(chan struct{})
	fw, err := portforward.NewOnAddressesWithContext(ctx, dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", port)}, ready, io.Discard, ginkgo.GinkgoWriter)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	done := make(chan error, 1)
	go func() { done <- fw.ForwardPorts() }()
	ginkgo.DeferCleanup(func() {
		cancel()
		<-done
	})
	select {
	case <-ready:
	case err := <-done:
		ginkgo.Fail(fmt.Sprintf("forwarding a port to pod %s/%s:%d: %v", pod.Namespace, pod.Name, port, err))
	case <-time.After(30 * time.Second):
		ginkgo.Fail(fmt.Sprintf("forwarding a port to pod %s/%s:%d: not ready in 30s", pod.Namespace, pod.Name, port))
	}
	ports, err := fw.GetPorts()
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	ginkgo.By(fmt.Sprintf("reaching pod %s/%s:%d at 127.0.0.1:%d (forwarded through the API server)", pod.Namespace, pod.Name, port, ports[0].Local))
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(int(ports[0].Local)))
}
