package parity

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/types"
)

// Finding is the verdict on one Deployment or StatefulSet that carried intent.
type Finding struct {
	Kind, Namespace, Name, Intent string
	// Spec that created it, and its strategy (as admitted; "X from Y" when
	// the gang policy rewrote Y).
	Spec, Strategy string
	// OK: every pod it created was in a PodGroup, and the Workload and
	// PodGroups the KEPs require were there.
	OK bool
	// Judged is false when the object created no pod, or its intent
	// changed, or its pods came from an adopted ReplicaSet: then there is
	// nothing the KEPs require of it that the record can show.
	Judged bool
	// Workloads and PodGroups owned by it (a Deployment's PodGroups are
	// its ReplicaSets').
	Workloads, PodGroups int
	// Pods created, and how many of them named a PodGroup.
	Pods, PodsInGroup int
	// Why is the reason it is not OK, or not judged.
	Why string
}

// Judge checks the record against the KEPs, for every object with intent in
// an e2e namespace:
//   - KEP-6276: "one Deployment-owned Workload, one ReplicaSet-owned
//     PodGroup per revision"; KEP-6277: "one Workload and one PodGroup for
//     the StatefulSet's whole life". So an object that created pods has a
//     Workload it owns, and every ReplicaSet (StatefulSet) that created
//     pods has a PodGroup it owns.
//   - Its pods name a PodGroup (spec.schedulingGroup.podGroupName).
//   - With gang intent, its PodGroups are gang PodGroups.
func Judge(o *Observations) []Finding {
	workloads := owned(o.Workloads)
	podGroups := owned(o.PodGroups)
	var out []Finding
	for uid, ow := range o.Owners {
		ns := o.Namespaces[ow.Namespace]
		if ns == nil || ow.Intent == "" {
			continue
		}
		f := Finding{Kind: ow.Kind, Namespace: ow.Namespace, Name: ow.Name, Intent: ow.Intent, Spec: SpecName(ns.Spec), Strategy: ow.Strategy}
		if ow.RewrittenFrom != "" {
			f.Strategy += " from " + ow.RewrittenFrom
		}
		f.Workloads = len(workloads[uid])
		// The controllers whose pods count: the StatefulSet itself, or the
		// Deployment's own ReplicaSets.
		controllers := []types.UID{uid}
		adopted := false
		if ow.Kind == "Deployment" {
			controllers = nil
			for rsUID, rs := range o.ReplicaSets {
				if rs.Namespace != ow.Namespace {
					continue
				}
				if rs.Deployment == uid {
					controllers = append(controllers, rsUID)
				} else if rs.Adopted {
					adopted = true
				}
			}
		}
		var missing []string
		var notGang int
		for _, c := range controllers {
			pods := o.Pods[c]
			if pods == nil || pods.Created == 0 {
				continue
			}
			f.Pods += pods.Created
			f.PodsInGroup += pods.InGroup
			groups := podGroups[c]
			f.PodGroups += len(groups)
			if len(groups) == 0 {
				missing = append(missing, fmt.Sprintf("no PodGroup owned by the controller of pod %s", pods.FirstName))
			}
			for _, g := range groups {
				if !g.Gang {
					notGang++
				}
			}
		}
		switch {
		case ow.IntentChanged:
			f.Why = "its intent changed during the spec"
		case ow.Intent == "invalid":
			f.Why = "its intent does not parse"
		case f.Pods == 0 && adopted:
			f.Why = "its pods came from an adopted ReplicaSet"
		case f.Pods == 0:
			f.Why = "it created no pod"
		default:
			f.Judged = true
			switch {
			case f.Workloads == 0:
				f.Why = fmt.Sprintf("no Workload owned by the %s", ow.Kind)
			case len(missing) > 0:
				f.Why = missing[0]
			case f.PodsInGroup < f.Pods:
				f.Why = fmt.Sprintf("%d of %d pods named no PodGroup", f.Pods-f.PodsInGroup, f.Pods)
			case ow.Intent == "gang" && notGang > 0:
				f.Why = fmt.Sprintf("%d of its PodGroups are not gang", notGang)
			default:
				f.OK = true
			}
		}
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Kind+out[i].Name < out[j].Kind+out[j].Name
	})
	return out
}

func owned(objs map[types.UID]*Object) map[types.UID][]*Object {
	out := map[types.UID][]*Object{}
	for _, o := range objs {
		if o.Owner != "" {
			out[o.Owner] = append(out[o.Owner], o)
		}
	}
	return out
}
