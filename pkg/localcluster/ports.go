package localcluster

import (
	"fmt"
	"net"
)

// ports are the loopback ports of one cluster. They are chosen once, at the
// first start, and kept across component restarts so clients keep working.
type ports struct {
	etcdClient, etcdPeer, apiserver, controllerManager, scheduler, kwok int
	// The reference implementation: health/metrics of each process, and the webhook.
	wasWebhook, wasWebhookServing, wasControllerManager int
}

func (p *ports) of(name Component) int {
	switch name {
	case Etcd:
		return p.etcdClient
	case APIServer:
		return p.apiserver
	case ControllerManager:
		return p.controllerManager
	case Scheduler:
		return p.scheduler
	case Kwok:
		return p.kwok
	case WASWebhook:
		return p.wasWebhook
	case WASControllerManager:
		return p.wasControllerManager
	}
	return 0
}

// FreePorts returns n distinct free TCP ports on 127.0.0.1. All listeners are
// held until every port is chosen, so the kernel cannot hand out one port
// twice; a process outside this one can still take a port before the component
// binds it, which start() reports as the component failing with its log.
func FreePorts(n int) ([]int, error) {
	listeners := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	out := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port on 127.0.0.1: %w", err)
		}
		listeners = append(listeners, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

func allocatePorts() (ports, error) {
	p, err := FreePorts(9)
	if err != nil {
		return ports{}, err
	}
	return ports{etcdClient: p[0], etcdPeer: p[1], apiserver: p[2], controllerManager: p[3], scheduler: p[4], kwok: p[5],
		wasWebhook: p[6], wasWebhookServing: p[7], wasControllerManager: p[8]}, nil
}

// advertiseAddress picks the machine's first non-loopback IPv4 address: the
// apiserver refuses a loopback advertise address for its service endpoints.
// It falls back to 127.0.0.1 on a machine with no other address.
func advertiseAddress() string {
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && ipn.IP.To4() != nil && !ipn.IP.IsLinkLocalUnicast() {
				return ipn.IP.String()
			}
		}
	}
	return "127.0.0.1"
}
