package localcluster

import (
	"github.com/workload-aware/apps-harness/pkg/pki"
	"github.com/workload-aware/apps-harness/pkg/webhookclient"
)

// writeWebhookClient makes the API server present a client certificate of
// the cluster's CA (webhookclient.CommonName) to every admission webhook it
// calls, as a real cluster's can; an add-on's webhook may require it:
// $(CLIENT_CA_FILE) and $(WEBHOOK_CLIENT_NAME). The kubeconfig's one user is
// "*": on loopback every webhook is the harness's or an add-on's.
func (c *Cluster) writeWebhookClient(ca *pki.CA) error {
	return webhookclient.Write(c.paths.pki, c.paths.pki, "*", ca)
}
