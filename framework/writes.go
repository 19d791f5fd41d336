package framework

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/watch"
)

// Counting an implementation's writes from watches (vendor mode: no audit
// log needed, unlike the local cluster's benchmark).
//
// Who sent a write is told by what it changed, not by managedFields'
// manager: in a native implementation the Deployment, ReplicaSet and
// StatefulSet controllers, the garbage collector and the PodGroup protection
// controller all run in kube-controller-manager under one manager name, and
// a spec must not depend on the names an implementation gives its clients.
// What separates the writers is what each may write:
//   - the scheduler writes only a PodGroup's status (its conditions), through
//     the status subresource, which leaves spec and metadata as they were;
//   - the garbage collector and a finalizer's owner write an object only once
//     it is going (deletionTimestamp set: its finalizers, ownerReferences) or
//     when one of its owners is deleted, which the lifecycles counted here
//     never do;
//   - the user writes neither a Workload nor a PodGroup in those lifecycles.
//
// So a create, the first write that marks an object as going (a delete,
// whether or not a finalizer holds it), and a write that changes the spec or
// metadata of a live object are the implementation's; a status-only write,
// and any later write to an object already going, are the others'. A watch
// sees a write only when it changed the object: a call that changes nothing
// (an identical patch) costs a request but no etcd write, and only an audit
// log (the Benchmark spec's) can count it.

// WriteTally sorts the writes of one resource.
type WriteTally struct {
	Resource string
	// Creates are the objects created.
	Creates []Change
	// Updates are the writes that changed a live object's spec or metadata.
	Updates []Change
	// Deletes are the first writes that mark each object as going.
	Deletes []Change
	// Others are status-only writes and writes to an object already going.
	Others []Change
}

// TallyWrites sorts the changes of resource (in revision order, as
// WriteHistory.Sorted returns them) by the rules above.
func TallyWrites(changes []Change, resource string) WriteTally {
	t := WriteTally{Resource: resource}
	going := map[string]bool{}
	for _, c := range changes {
		if c.Resource != resource {
			continue
		}
		switch {
		case going[c.UID]:
			t.Others = append(t.Others, c)
		case c.Terminating:
			going[c.UID] = true
			t.Deletes = append(t.Deletes, c)
		case c.Type == watch.Added:
			t.Creates = append(t.Creates, c)
		case c.OnlyStatus():
			t.Others = append(t.Others, c)
		case c.Type == watch.Modified && c.Fields != "":
			t.Updates = append(t.Updates, c)
		default: // a replayed event of a revision already seen
			t.Others = append(t.Others, c)
		}
	}
	return t
}

// UpdatesNotChanging returns the updates that changed none of paths (each a
// Change.Changed path).
func (t WriteTally) UpdatesNotChanging(paths ...string) []Change {
	var out []Change
	for _, c := range t.Updates {
		if !slices.ContainsFunc(paths, c.Changed) {
			out = append(out, c)
		}
	}
	return out
}

// Of returns the tally's writes of one object.
func (t WriteTally) Of(uid string) WriteTally {
	keep := func(cs []Change) []Change {
		var out []Change
		for _, c := range cs {
			if c.UID == uid {
				out = append(out, c)
			}
		}
		return out
	}
	return WriteTally{Resource: t.Resource, Creates: keep(t.Creates), Updates: keep(t.Updates), Deletes: keep(t.Deletes), Others: keep(t.Others)}
}

// Implementation is the number of writes attributed to the implementation.
func (t WriteTally) Implementation() int { return len(t.Creates) + len(t.Updates) + len(t.Deletes) }

// String is one line for a log: the counts, and what each update changed.
func (t WriteTally) String() string {
	s := fmt.Sprintf("%s: %d create, %d update, %d delete", t.Resource, len(t.Creates), len(t.Updates), len(t.Deletes))
	for _, c := range t.Updates {
		s += fmt.Sprintf(" [update %s minCount=%d: %s]", c.Name, c.MinCount, c.Fields)
	}
	return s + fmt.Sprintf("; %d by others (status, or the object already going)", len(t.Others))
}

// WritePhases cuts a WriteHistory into the named steps of a lifecycle: a
// step's writes are those recorded after the previous step settled, up to
// its own settling.
type WritePhases struct {
	h         *WriteHistory
	resources []string
	mark      uint64
	// Log lists each step's tallies, for the spec's log and report.
	Log []string
}

// settleFor is how long a step's writes must have stopped before the next
// step starts. A step waits first for its end state, which the writes it
// causes lead to, so this only keeps a late write of one step (a scheduler
// condition) from being counted in the next one.
const settleFor = 3 * time.Second

// NewWritePhases starts cutting h, whose writes of resources (e.g.
// "workloads", "podgroups") the steps tally.
func NewWritePhases(h *WriteHistory, resources ...string) *WritePhases {
	return &WritePhases{h: h, resources: resources}
}

// Step runs step (the action and the wait for its end state), waits until
// no write of the resources has been recorded for settleFor, logs the
// tallies and returns them, by resource.
func (p *WritePhases) Step(ctx context.Context, name string, step func()) map[string]WriteTally {
	ginkgo.GinkgoHelper()
	ginkgo.By(name)
	step()
	count := func() int { return len(p.since()) }
	gomega.Eventually(ctx, func() bool {
		n := count()
		time.Sleep(settleFor)
		return count() == n
	}).WithTimeout(TestContext.Timeouts.PodsBound).WithPolling(TestContext.Timeouts.Poll).Should(gomega.BeTrue(),
		"the writes of %q do not stop; the last of them:\n%s", name, lastOf(p.since(), 20))
	changes := p.since()
	out := map[string]WriteTally{}
	line := name + ":"
	for _, r := range p.resources {
		out[r] = TallyWrites(changes, r)
		line += "\n    " + out[r].String()
	}
	for _, c := range changes {
		p.mark = max(p.mark, c.Revision)
	}
	p.Log = append(p.Log, line)
	ginkgo.GinkgoWriter.Println(line)
	return out
}

// lastOf lists the last n changes, one a line, and how many came before.
func lastOf(changes []Change, n int) string {
	var b strings.Builder
	if len(changes) > n {
		fmt.Fprintf(&b, "  (%d earlier)\n", len(changes)-n)
		changes = changes[len(changes)-n:]
	}
	for _, c := range changes {
		b.WriteString("  " + c.String() + "\n")
	}
	return b.String()
}

// since returns the changes of the resources after the mark.
func (p *WritePhases) since() []Change {
	var out []Change
	for _, c := range p.h.Sorted() {
		if c.Revision > p.mark && slices.Contains(p.resources, c.Resource) {
			out = append(out, c)
		}
	}
	return out
}

// Total tallies every write of resource since the history started.
func (p *WritePhases) Total(resource string) WriteTally { return TallyWrites(p.h.Sorted(), resource) }

// Report records the steps' tallies in the spec's report: what the
// implementation did, for a vendor to compare.
func (p *WritePhases) Report(what string) {
	ginkgo.AddReportEntry(what, strings.Join(p.Log, "\n"))
}

// QuietPeriod is the steady-state step: for window, it calls sync every
// interval (a write to the owning object that makes every controller
// involved reconcile, see the specs), so that an implementation that writes
// on any sync of an unchanged state is seen without waiting for its
// informers' resync.
func QuietPeriod(ctx context.Context, window, interval time.Duration, sync func(ctx context.Context, n int)) {
	ginkgo.GinkgoHelper()
	deadline := time.Now().Add(window)
	n := 0
	for n = 1; time.Now().Before(deadline); n++ {
		sync(ctx, n)
		select {
		case <-ctx.Done():
			ginkgo.Fail("the quiet period was interrupted: " + ctx.Err().Error())
		case <-time.After(min(interval, time.Until(deadline))):
		}
	}
	ginkgo.GinkgoWriter.Printf("quiet period of %s: %d syncs forced, one every %s\n", window, n-1, interval)
}

// The fields the KEPs' Scalability sections name as the reason for a write.
const (
	// WorkloadMinCountField is a Workload's (only) template gang minCount.
	WorkloadMinCountField = "spec.podGroupTemplates[0].schedulingPolicy.gang.minCount"
	// PodGroupMinCountField is a PodGroup's gang minCount.
	PodGroupMinCountField = "spec.schedulingPolicy.gang.minCount"
	// OwnerReferencesField is any object's ownerReferences.
	OwnerReferencesField = "metadata.ownerReferences"
)

// ExpectUpdatesChange fails the spec if an update of t changed none of
// paths: a write for a reason the KEP does not list (why names it).
func ExpectUpdatesChange(t WriteTally, why string, paths ...string) {
	ginkgo.GinkgoHelper()
	gomega.Expect(t.UpdatesNotChanging(paths...)).To(gomega.BeEmpty(),
		"%s: these %s writes changed none of %v; %s", t.Resource, t.Resource, paths, why)
}

// ExpectMinCountWritten fails the spec unless the object uid got at least
// one update in t and the last one left it at minCount want: a scale's
// minCount writes may be one or several, but they must end at the value.
func ExpectMinCountWritten(t WriteTally, uid string, want int32, why string) {
	ginkgo.GinkgoHelper()
	mine := t.Of(uid).Updates
	gomega.Expect(mine).NotTo(gomega.BeEmpty(), "%s: no %s write of %s was seen; %s", t.Resource, t.Resource, uid, why)
	gomega.Expect(mine[len(mine)-1].MinCount).To(gomega.Equal(want),
		"%s: the last write of %s left minCount %d, want %d; %s (writes: %v)", t.Resource, mine[len(mine)-1].Name, mine[len(mine)-1].MinCount, want, why, mine)
}

// ExpectCounts fails the spec unless t has exactly creates creations and
// deletes deletions (-1: not checked).
func ExpectCounts(t WriteTally, creates, deletes int, why string) {
	ginkgo.GinkgoHelper()
	if creates >= 0 {
		gomega.Expect(t.Creates).To(gomega.HaveLen(creates), "%s created: %v; %s", t.Resource, t.Creates, why)
	}
	if deletes >= 0 {
		gomega.Expect(t.Deletes).To(gomega.HaveLen(deletes), "%s deleted: %v; %s", t.Resource, t.Deletes, why)
	}
}
