package statefulset

import (
	"reflect"
	"testing"

	"k8s.io/client-go/tools/cache"
)

// S-P3/S-P4 at unit level: a StatefulSet scaled while the gate was off has
// all its pods already, so no pod write will come; the sync worker resyncs
// minCount on the same objects once the gate is back, and writes nothing
// when nothing differs.
func TestSyncWorker(t *testing.T) {
	t.Run("S-P3_reenabled_gate_resyncs_minCount_without_a_pod_write", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		set, w, pg := stScaledSetup(t, e, 3)
		e.gateOn.Store(false)
		set = stScale(e, set, 5)
		for i := 3; i < 5; i++ {
			e.seedPod(stPod(set, i, stRevision1)) // made by upstream while the gate was off
		}
		e.SyncCaches()
		e.Client.ClearActions()
		worker := &SyncWorker{r: e.r}
		key, _ := cache.MetaNamespaceKeyFunc(set)
		if err := worker.sync(e.Ctx, key); err != nil {
			t.Fatal(err)
		}
		if got := e.SchedulingWrites(); len(got) != 0 {
			t.Fatalf("with the gate off the worker wrote %v", got)
		}
		e.gateOn.Store(true)
		if err := worker.sync(e.Ctx, key); err != nil {
			t.Fatal(err)
		}
		if got, want := e.SchedulingWrites(), []string{"update workloads", "update podgroups"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("writes = %v, want %v", got, want)
		}
		gotW, gotPG := e.GetWorkload(w.Name), e.GetPodGroup(pg.Name)
		if stTemplateMin(gotW) != 5 || stGangMin(gotPG) != 5 || gotW.UID != w.UID || gotPG.UID != pg.UID {
			t.Errorf("minCounts %d/%d on uids %s/%s, want 5/5 on the original objects", stTemplateMin(gotW), stGangMin(gotPG), gotW.UID, gotPG.UID)
		}
		e.WaitWorkloadCached(gotW.Name, gotW.ResourceVersion)
		e.WaitPodGroupCached(gotPG.Name, gotPG.ResourceVersion)
		e.Client.ClearActions()
		if err := worker.sync(e.Ctx, key); err != nil {
			t.Fatal(err)
		}
		if got := e.SchedulingWrites(); len(got) != 0 {
			t.Errorf("a second sync wrote %v, want nothing", got)
		}
		if len(e.StoredWorkloads()) != 1 || len(e.StoredPodGroups()) != 1 {
			t.Errorf("objects created: %d Workloads, %d PodGroups", len(e.StoredWorkloads()), len(e.StoredPodGroups()))
		}
	})
}
