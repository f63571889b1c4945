// Package quic runs real quic-go over uplink's virtual UDP sockets.
package quic

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"time"

	quicgo "github.com/quic-go/quic-go"
)

// ALPN is the application protocol uplink's own QUIC endpoints negotiate.
const ALPN = "uplink"

// ServerTLS returns a TLS configuration with a fresh self-signed ECDSA P-256
// certificate. It must be called inside the bubble: the certificate is
// valid around the bubble's virtual now (the bubble's clock starts in 2000).
func ServerTLS() (*tls.Config, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("quic: generating a key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "uplink"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(365 * 24 * time.Hour),
		DNSNames:     []string{"uplink"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("quic: creating a certificate: %w", err)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
		NextProtos:   []string{ALPN},
	}, nil
}

// ClientTLS returns the client side: it accepts the simulated peer's
// self-signed certificate.
func ClientTLS() *tls.Config {
	return &tls.Config{InsecureSkipVerify: true, NextProtos: []string{ALPN}, ServerName: "uplink"}
}

// Listen runs a QUIC listener on a virtual packet conn.
func Listen(pc net.PacketConn, tlsConf *tls.Config, conf *quicgo.Config) (*quicgo.Transport, *quicgo.Listener, error) {
	tr := &quicgo.Transport{Conn: pc}
	ln, err := tr.Listen(tlsConf, conf)
	if err != nil {
		return nil, nil, fmt.Errorf("quic: listen on %v: %w", pc.LocalAddr(), err)
	}
	return tr, ln, nil
}

// Dial opens a QUIC connection from a virtual packet conn to addr.
func Dial(ctx context.Context, pc net.PacketConn, addr net.Addr, tlsConf *tls.Config, conf *quicgo.Config) (*quicgo.Transport, *quicgo.Conn, error) {
	tr := &quicgo.Transport{Conn: pc}
	c, err := tr.Dial(ctx, addr, tlsConf, conf)
	if err != nil {
		tr.Close()
		return nil, nil, fmt.Errorf("quic: dial %v: %w", addr, err)
	}
	return tr, c, nil
}
