package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/workload-aware/apps-harness/pkg/localcluster"
)

// clusterFaultCmd does one fault to a running `cluster up` cluster, for the
// hooks of that cluster (hack/fault-local.sh, hack/controller-restart-local.sh):
//
//	kill --component C              SIGKILL to C, then C started again with the same flags
//	restart-together --component C,D,...  all of them stopped, then started again
//	stop-node --node N, start-node --node N   kwok stops (starts) acting for node N
//	compact-etcd                    etcd's history compacted up to its current revision
func clusterFaultCmd(verb, dir, component, node string) error {
	c, err := localcluster.Attach(dir, func(format string, args ...any) { fmt.Printf("[cluster] "+format+"\n", args...) })
	if err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	needNode := func() error {
		if node == "" {
			return fmt.Errorf("cluster %s: --node is required", verb)
		}
		return nil
	}
	switch verb {
	case "kill":
		if component == "" {
			return fmt.Errorf("cluster kill: --component is required (see `cluster status`)")
		}
		return c.Kill(ctx, localcluster.Component(component))
	case "restart-together":
		var names []localcluster.Component
		for _, n := range strings.Split(component, ",") {
			if n = strings.TrimSpace(n); n != "" {
				names = append(names, localcluster.Component(n))
			}
		}
		if len(names) == 0 {
			return fmt.Errorf("cluster restart-together: --component C,D,... is required (see `cluster status`)")
		}
		return c.RestartTogether(ctx, names...)
	case "stop-node":
		if err := needNode(); err != nil {
			return err
		}
		return c.StopNode(ctx, node)
	case "start-node":
		if err := needNode(); err != nil {
			return err
		}
		return c.StartNode(ctx, node)
	case "compact-etcd":
		rev, err := c.CompactEtcd(ctx)
		if err == nil {
			fmt.Printf("compacted etcd up to revision %d\n", rev)
		}
		return err
	}
	return usage()
}
