// Command smoke is the program of the image that scripts/kube/cluster's smoke
// check runs in its cluster:
//
//	smoke serve ADDR   serve HTTP on ADDR; every path answers "smoke <hostname>"
//	smoke get URL      GET URL (5 s timeout) and print the body; exit 1 on failure
package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: smoke serve ADDR | smoke get URL")
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
	case "get":
		c := &http.Client{Timeout: 5 * time.Second}
		resp, err := c.Get(os.Args[2])
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
		fmt.Fprintln(os.Stderr, "usage: smoke serve ADDR | smoke get URL")
		os.Exit(2)
	}
}
