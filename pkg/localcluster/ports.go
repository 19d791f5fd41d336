package localcluster

import (
	"fmt"
	"net"
)

// ports are the loopback ports of one cluster. They are chosen once, at the
// first start, and kept across component restarts so clients keep working.
type ports struct {
	etcdClient, etcdPeer, apiserver, controllerManager, scheduler, kwok int
	// addon holds each add-on component's plain-HTTP port (health, metrics);
	// addonServing the HTTPS port of those that serve a webhook.
	addon, addonServing map[Component]int
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
	}
	return p.addon[name]
}

func (p *ports) serving(name Component) int { return p.addonServing[name] }

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

// allocatePorts picks the control plane's ports and those of cfg's add-ons.
func allocatePorts(cfg *Config) (ports, error) {
	var components, serving []Component
	for _, a := range cfg.Addons {
		for _, ac := range a.Components {
			components = append(components, ac.Name)
			if ac.Serves != "" {
				serving = append(serving, ac.Name)
			}
		}
	}
	p, err := FreePorts(6 + len(components) + len(serving))
	if err != nil {
		return ports{}, err
	}
	out := ports{etcdClient: p[0], etcdPeer: p[1], apiserver: p[2], controllerManager: p[3], scheduler: p[4], kwok: p[5],
		addon: map[Component]int{}, addonServing: map[Component]int{}}
	next := p[6:]
	for _, name := range components {
		out.addon[name], next = next[0], next[1:]
	}
	for _, name := range serving {
		out.addonServing[name], next = next[0], next[1:]
	}
	return out, nil
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
