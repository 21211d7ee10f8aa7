// SPDX-License-Identifier: Apache-2.0

// Command pause is the cluster's sandbox image: it holds a pod's namespaces, reaps
// the children it inherits and exits on SIGINT or SIGTERM. FROM scratch, so nothing
// is pulled (hack/cluster.sh builds and imports it).
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
