package framework

import (
	"reflect"
	"strings"
	"testing"
)

// TestScanAudit: events are read line by line, a partial last line (the log
// is read while the apiserver appends) is skipped, and WriteKey shortens
// kube-system service accounts and names subresources.
func TestScanAudit(t *testing.T) {
	log := strings.Join([]string{
		`{"stage":"ResponseComplete","verb":"create","user":{"username":"system:serviceaccount:kube-system:replicaset-controller"},"objectRef":{"apiGroup":"scheduling.k8s.io","resource":"podgroups","namespace":"ns"}}`,
		`{"stage":"ResponseComplete","verb":"update","user":{"username":"system:kube-scheduler"},"objectRef":{"apiGroup":"scheduling.k8s.io","resource":"podgroups","subresource":"status","namespace":"ns"}}`,
		`{"stage":"ResponseComplete","verb":"delete","user":{"username":"was-contr`,
	}, "\n")
	var keys []string
	if err := ScanAudit(strings.NewReader(log), func(ev AuditEvent) { keys = append(keys, ev.WriteKey()) }); err != nil {
		t.Fatal(err)
	}
	want := []string{"replicaset-controller: create podgroups", "system:kube-scheduler: update podgroups/status"}
	if !reflect.DeepEqual(keys, want) {
		t.Errorf("keys = %q, want %q", keys, want)
	}
}
