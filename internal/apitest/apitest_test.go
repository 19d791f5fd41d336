package apitest

import (
	"context"
	"os"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestMain(m *testing.M) { os.Exit(Run(m)) }

// TestStart: the control plane answers, and a generated namespace exists.
func TestStart(t *testing.T) {
	api := Start(t)
	ns := api.Namespace(t)
	if _, err := api.Client.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if again := Start(t); again != api {
		t.Error("a second Start started another control plane")
	}
}
