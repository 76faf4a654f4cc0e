// Command smoke is the program of the image that scripts/kube/cluster's smoke
// check runs in its cluster:
//
//	smoke serve ADDR   serve HTTP on ADDR; every path answers "smoke <hostname>"
//	smoke get URL      GET URL (5 s timeout) and print the body; exit 1 on failure
//	smoke api PATH     GET PATH from the Kubernetes API as the pod's service
//	                   account (KUBERNETES_SERVICE_HOST/PORT, its token and CA)
package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"
)

const saDir = "/var/run/secrets/kubernetes.io/serviceaccount/"

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: smoke serve ADDR | smoke get URL | smoke api PATH")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "serve":
		host, _ := os.Hostname()
		srv := &http.Server{
			Addr:              os.Args[2],
			ReadHeaderTimeout: 10 * time.Second,
			Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				fmt.Fprintf(w, "smoke %s\n", host)
			}),
		}
		fmt.Fprintln(os.Stderr, srv.ListenAndServe())
		os.Exit(1)
	case "get", "api":
		c := &http.Client{Timeout: 5 * time.Second}
		req, err := http.NewRequest(http.MethodGet, os.Args[2], nil)
		if err == nil && os.Args[1] == "api" {
			req, err = apiRequest(c, os.Args[2])
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		resp, err := c.Do(req)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer resp.Body.Close()
		if _, err := io.Copy(os.Stdout, resp.Body); err != nil || resp.StatusCode != http.StatusOK {
			fmt.Fprintln(os.Stderr, resp.Status, err)
			os.Exit(1)
		}
	default:
		fmt.Fprintln(os.Stderr, "usage: smoke serve ADDR | smoke get URL | smoke api PATH")
		os.Exit(2)
	}
}

// apiRequest makes c trust the service account's CA and returns a request for
// path on the API server with the service account's token.
func apiRequest(c *http.Client, path string) (*http.Request, error) {
	ca, err := os.ReadFile(saDir + "ca.crt")
	if err != nil {
		return nil, err
	}
	token, err := os.ReadFile(saDir + "token")
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("no certificate in %sca.crt", saDir)
	}
	c.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	host := net.JoinHostPort(os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT"))
	req, err := http.NewRequest(http.MethodGet, "https://"+host+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+string(token))
	return req, nil
}
