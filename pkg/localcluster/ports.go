package localcluster

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"
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
// twice to this call. Several clusters may start at once, in several
// processes (the suite's own clusters): each port chosen is also reserved on
// the machine for portReservation (a file in portReservations), and a port
// another process reserved in that time is passed over, so two clusters
// never pick the same port between its choice and its bind. A process
// outside the harness can still take a port before the component binds it,
// which start() reports as the component failing with its log.
func FreePorts(n int) ([]int, error) {
	listeners := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	out := make([]int, 0, n)
	for tries := 0; len(out) < n; tries++ {
		if tries > 100+10*n {
			return nil, fmt.Errorf("finding %d free ports on 127.0.0.1: every port the kernel offered was reserved by another cluster's start (%s)", n, portReservations())
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port on 127.0.0.1: %w", err)
		}
		listeners = append(listeners, l) // held, reserved or not: the kernel offers another next
		port := l.Addr().(*net.TCPAddr).Port
		if reservePort(port) {
			out = append(out, port)
		}
	}
	return out, nil
}

// portReservation is how long a chosen port stays reserved: far longer than
// a component takes from the choice to its bind, after which the kernel
// itself keeps the port from other listeners.
const portReservation = 2 * time.Minute

// portReservations is the machine-wide directory of reserved ports.
func portReservations() string { return filepath.Join(os.TempDir(), "was-localcluster-ports") }

// reservePort reserves port unless another process did within
// portReservation. Without a usable directory it reserves nothing and
// says yes: the kernel's own choice is what it was before reservations.
func reservePort(port int) bool {
	dir := portReservations()
	if err := os.MkdirAll(dir, 0o1777); err != nil {
		return true
	}
	path := filepath.Join(dir, strconv.Itoa(port))
	for range 2 {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err == nil {
			f.Close()
			return true
		}
		if !errors.Is(err, fs.ErrExist) {
			return true
		}
		st, err := os.Stat(path)
		if err == nil && time.Since(st.ModTime()) < portReservation {
			return false
		}
		// Stale: the port was chosen long ago; take it over (one of two
		// processes doing so at once wins the create).
		_ = os.Remove(path)
	}
	return false
}

// renewReservation reserves port again, for this cluster, before a
// component binds it anew (a restart): in the moment it is unbound the
// kernel would offer it to another cluster's start.
func renewReservation(port int) {
	if port <= 0 {
		return
	}
	path := filepath.Join(portReservations(), strconv.Itoa(port))
	now := time.Now()
	if os.Chtimes(path, now, now) != nil {
		_ = os.WriteFile(path, nil, 0o644)
	}
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
