package framework

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// A kube-apiserver that has just restarted refuses a watch with 403 until
// its authorizer has synced (found on kind): resumeWatch resumes from the
// last revision and reports no gap; a refusal that lasts is a gap.
func TestResumeWatchWaitsOutARefusal(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "scheduling.k8s.io", Resource: "workloads"}, "", errors.New("RBAC: not yet synced"))
	for _, tc := range []struct {
		name     string
		refusals int32
		wrapped  bool // the refusal wrapped, not an APIStatus itself (as seen on kind)
		wantGap  bool
	}{
		{"refused twice, then served", 2, false, false},
		{"refused twice, wrapped, then served", 2, true, false},
		{"refused for longer than the grace", 1 << 30, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var calls atomic.Int32
			events := make(chan watch.Event, 1)
			c := collection{what: "things",
				list: func(context.Context, metav1.ListOptions) ([]runtime.Object, string, error) { return nil, "5", nil },
				watch: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
					if calls.Add(1) <= tc.refusals {
						if tc.wrapped {
							return nil, fmt.Errorf("watching: %w", forbidden)
						}
						return nil, forbidden
					}
					if opts.ResourceVersion != "5" {
						t.Errorf("watch resumed from %q, want the last revision delivered, 5", opts.ResourceVersion)
					}
					w := watch.NewFake()
					go w.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: "6"}})
					return w, nil
				},
			}
			gaps := make(chan error, 1)
			if tc.wantGap {
				defer func(g time.Duration) { refusalGrace = g }(refusalGrace)
				refusalGrace = 2 * time.Second
			}
			done, err := resumeWatch(ctx, c, nil, func(ev watch.Event) { events <- ev }, func(err error) { gaps <- err })
			if err != nil {
				t.Fatal(err)
			}
			select {
			case ev := <-events:
				if tc.wantGap {
					t.Fatalf("event %v delivered, want a gap", ev.Type)
				}
			case err := <-gaps:
				if !tc.wantGap {
					t.Fatalf("gap reported: %v", err)
				}
				if !strings.Contains(err.Error(), "forbidden") {
					t.Errorf("gap %v, want the refusal", err)
				}
			case <-ctx.Done():
				t.Fatal("neither an event nor a gap")
			}
			cancel()
			<-done
		})
	}
}
