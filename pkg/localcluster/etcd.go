package localcluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// CompactEtcd compacts etcd's history up to its current revision, through
// etcd's JSON gateway on the client port, and returns that revision. After
// it, a watch or list at any older resourceVersion that is not served from
// kube-apiserver's watch cache fails with "410 Gone: too old resource
// version", and once the apiserver restarts (emptying that cache) every
// client resuming a watch must relist: the way watches expire on a busy
// production cluster, made to happen on demand.
func (c *Cluster) CompactEtcd(ctx context.Context) (int64, error) {
	c.mu.Lock()
	base := fmt.Sprintf("http://%s:%d/v3/kv/", loopback, c.ports.etcdClient)
	c.mu.Unlock()
	var rng struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
	}
	// Any key will do: the response header carries the store's revision.
	if err := etcdCall(ctx, base+"range", map[string]any{"key": "Lw==", "limit": 1, "keys_only": true}, &rng); err != nil {
		return 0, err
	}
	rev, err := strconv.ParseInt(rng.Header.Revision, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("etcd answered revision %q: %w", rng.Header.Revision, err)
	}
	if err := etcdCall(ctx, base+"compaction", map[string]any{"revision": strconv.FormatInt(rev, 10), "physical": true}, nil); err != nil {
		return 0, err
	}
	c.cfg.Logf("compacted etcd up to revision %d", rev)
	return rev, nil
}

func etcdCall(ctx context.Context, url string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("etcd %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var msg bytes.Buffer
		_, _ = msg.ReadFrom(resp.Body)
		return fmt.Errorf("etcd %s: %s: %s", url, resp.Status, msg.String())
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}
