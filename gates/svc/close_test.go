package svc

import (
	"net/http"
	"testing"
)

// Close releases the stand-in IdP: its JWKS stops answering, and a second Close is harmless.
// Before Close existed every Set left its loopback server running for the harness's life (one
// per chaos cell).
func TestCloseReleasesTheIdP(t *testing.T) {
	s := &Set{dir: t.TempDir()}
	if err := s.startIdentity(); err != nil {
		t.Fatal(err)
	}
	url := s.IdP().URL()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("the IdP does not answer before Close: %v", err)
	}
	_ = resp.Body.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.Get(url); err == nil {
		_ = resp.Body.Close()
		t.Fatalf("the IdP still answers after Close (%s)", resp.Status)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
}
