// SPDX-License-Identifier: Apache-2.0

//go:build ignore

// cert-manager's controller for test/cluster, built by hack/kube-peers.sh from the
// module github.com/cert-manager/cert-manager. The module proxy serves that module but
// not the module of cert-manager's own main (its own go.mod), so this is the part of
// cert-manager's controller app that a CA made by a self-signed ClusterIssuer needs: the
// Certificate control loops, the approver, the CA and self-signed signers and the
// ClusterIssuer loop, on cert-manager's own controller context. ACME, Vault, Venafi,
// the ingress and Gateway shims and leader election are left out: they drag in cloud
// SDKs and nothing in deploy/ uses them.
//
// Usage: cert-manager-controller --kubeconfig FILE [--cluster-resource-namespace NS]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/cert-manager/cert-manager/pkg/controller"
	logf "github.com/cert-manager/cert-manager/pkg/logs"

	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	_ "github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
)

// The loops that turn a Certificate into a Secret, as cmd/controller names them.
var loops = []string{
	"certificates-trigger",
	"certificates-key-manager",
	"certificates-request-manager",
	"certificates-issuing",
	"certificates-readiness",
	"certificates-revision-manager",
	"certificaterequests-approver",
	"certificaterequests-issuer-ca",
	"certificaterequests-issuer-selfsigned",
	"clusterissuers",
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the cluster")
	namespace := flag.String("cluster-resource-namespace", "cert-manager", "where ClusterIssuers read their Secrets")
	flag.Parse()
	logf.InitLogs()
	if err := run(*kubeconfig, *namespace); err != nil {
		fmt.Fprintln(os.Stderr, "cert-manager-controller:", err)
		os.Exit(1)
	}
}

func run(kubeconfig, namespace string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = logf.NewContext(ctx, logf.Log, "controller")

	factory, err := controller.NewContextFactory(ctx, controller.ContextOptions{
		Kubeconfig:         kubeconfig,
		KubernetesAPIQPS:   20,
		KubernetesAPIBurst: 50,
		IssuerOptions:      controller.IssuerOptions{ClusterResourceNamespace: namespace},
		CertificateOptions: controller.CertificateOptions{
			// cert-manager's defaults (cmd/controller/app/options).
			CertificateRequestMinimumBackoffDuration: time.Hour,
			CertificateRequestMaximumBackoffDuration: 32 * time.Hour,
		},
	})
	if err != nil {
		return err
	}
	known := controller.Known()
	var started []controller.Interface
	for _, name := range loops {
		construct, ok := known[name]
		if !ok {
			return fmt.Errorf("cert-manager has no controller %q", name)
		}
		c, err := construct(factory)
		if err != nil {
			return fmt.Errorf("controller %s: %w", name, err)
		}
		started = append(started, c)
	}
	// The loops registered their informers while they were built; start them now.
	shared, err := factory.Build()
	if err != nil {
		return err
	}
	shared.KubeSharedInformerFactory.Start(ctx.Done())
	shared.SharedInformerFactory.Start(ctx.Done())
	shared.HTTP01ResourceMetadataInformersFactory.Start(ctx.Done())

	var wg sync.WaitGroup
	errs := make(chan error, len(started))
	for i, c := range started {
		wg.Go(func() {
			if err := c.Run(5, ctx); err != nil {
				errs <- fmt.Errorf("controller %s: %w", loops[i], err)
				stop()
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}
