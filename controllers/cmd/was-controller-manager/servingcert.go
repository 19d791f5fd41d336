package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// certificateSource is where the webhook's TLS server gets its certificate
// on every handshake, and whether that certificate is still fit to serve.
type certificateSource interface {
	GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error)
	Check() error
}

var (
	_ certificateSource = &fileCertificate{}
	_ certificateSource = &selfSignedCertificate{}
)

// fileCertificate serves --tls-cert-file and --tls-private-key-file and
// reloads them when they change on disk (a certificate manager or a mounted
// Secret renews them), looking at most once per reloadInterval.
type fileCertificate struct {
	certFile, keyFile string
	reloadInterval    time.Duration
	now               func() time.Time

	mu        sync.Mutex
	cert      *tls.Certificate
	stamp     string // modification times and sizes of both files when loaded
	lastCheck time.Time
}

func newFileCertificate(certFile, keyFile string) (*fileCertificate, error) {
	f := &fileCertificate{certFile: certFile, keyFile: keyFile, reloadInterval: time.Second, now: time.Now}
	if err := f.reload(); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *fileCertificate) fileStamp() (string, error) {
	var stamp string
	for _, p := range []string{f.certFile, f.keyFile} {
		st, err := os.Stat(p)
		if err != nil {
			return "", err
		}
		stamp += fmt.Sprintf("%s:%d:%d;", p, st.ModTime().UnixNano(), st.Size())
	}
	return stamp, nil
}

// reload loads the pair if the files changed since the last load. A pair
// that does not load (half written) leaves the previous one in service.
func (f *fileCertificate) reload() error {
	stamp, err := f.fileStamp()
	if err != nil {
		return err
	}
	if stamp == f.stamp && f.cert != nil {
		return nil
	}
	pair, err := tls.LoadX509KeyPair(f.certFile, f.keyFile)
	if err != nil {
		return fmt.Errorf("loading %s and %s: %w", f.certFile, f.keyFile, err)
	}
	if f.cert != nil {
		klog.InfoS("Reloaded the webhook certificate", "certFile", f.certFile, "serial", pair.Leaf.SerialNumber, "notAfter", pair.Leaf.NotAfter)
	}
	f.cert, f.stamp = &pair, stamp
	return nil
}

// GetCertificate implements certificateSource.
func (f *fileCertificate) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if now := f.now(); now.Sub(f.lastCheck) >= f.reloadInterval {
		f.lastCheck = now
		if err := f.reload(); err != nil {
			klog.ErrorS(err, "Keeping the previous webhook certificate")
		}
	}
	if f.cert == nil {
		return nil, errors.New("no serving certificate")
	}
	return f.cert, nil
}

// Check fails once the loaded certificate has expired (the files' owner
// decides when to renew them).
func (f *fileCertificate) Check() error {
	cert, err := f.GetCertificate(nil)
	if err != nil {
		return err
	}
	if now := f.now(); now.After(cert.Leaf.NotAfter) {
		return fmt.Errorf("the serving certificate of %s expired at %s", f.certFile, cert.Leaf.NotAfter.Format(time.RFC3339))
	}
	return nil
}
