package msclient

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"math/big"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// selfSigned returns a certificate for 127.0.0.1 and a pool that trusts it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, IsCA: true, BasicConstraintsValid: true,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}

func TestTLSCarriesTheToken(t *testing.T) {
	cert, pool := selfSigned(t)
	rec, addr := serve(t, grpc.Creds(credentials.NewServerTLSFromCert(&cert)))
	c, err := Dial(addr, WithTLS(&tls.Config{RootCAs: pool}), WithToken("over-tls"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.GetConfig(context.Background(), "a")
	if got := (<-rec.got).Get("authorization"); len(got) != 1 || got[0] != "Bearer over-tls" {
		t.Errorf("authorization metadata = %v", got)
	}
}

func TestTLSRejectsAnUntrustedServer(t *testing.T) {
	cert, _ := selfSigned(t)
	_, addr := serve(t, grpc.Creds(credentials.NewServerTLSFromCert(&cert)))
	if _, err := Dial(addr, WithTLS(&tls.Config{}), WithDialTimeout(time.Second)); err == nil {
		t.Error("dial succeeded against a certificate nobody trusts")
	}
}
