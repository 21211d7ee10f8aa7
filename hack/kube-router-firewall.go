// SPDX-License-Identifier: Apache-2.0

//go:build ignore

// kube-router's NetworkPolicy firewall for test/cluster, built by hack/kube-peers.sh
// from the module github.com/cloudnativelabs/kube-router/v2: its own cmd/kube-router
// with only the --run-firewall branch of pkg/cmd's Run kept. The cluster routes pods
// with its bridge CNI and Services with kube-proxy, so the BGP router (gobgp) and the
// IPVS service proxy (the docker client) are left out, and with the router goes the
// AWS SDK it links for EC2's source/destination check: 14.8 MB of Go source that only
// kube-router compiled, a tenth of all the peers' (the ec2 package alone is 10 MB).
// The flags are kube-router's own; a router, service proxy or metrics asked for is
// refused.
//
// Usage: kube-router-firewall --kubeconfig FILE --run-firewall=true --run-router=false --run-service-proxy=false ...
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/cloudnativelabs/kube-router/v2/pkg/controllers/netpol"
	"github.com/cloudnativelabs/kube-router/v2/pkg/healthcheck"
	"github.com/cloudnativelabs/kube-router/v2/pkg/options"
	"github.com/cloudnativelabs/kube-router/v2/pkg/version"
	"github.com/spf13/pflag"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "kube-router:", err)
		os.Exit(1)
	}
}

func run() error {
	klog.InitFlags(nil)
	config := options.NewKubeRouterConfig()
	config.AddFlags(pflag.CommandLine)
	pflag.Parse()
	// As kube-router's main: klog's flags live in the standard flag set.
	if err := flag.CommandLine.Parse(nil); err != nil {
		return err
	}
	if err := flag.Set("logtostderr", "true"); err != nil {
		return err
	}
	if err := flag.Set("v", config.VLevel); err != nil {
		return err
	}
	if config.Version {
		version.PrintVersion(false)
		return nil
	}
	switch {
	case config.RunRouter, config.RunServiceProxy, config.RunLoadBalancer:
		return errors.New("this build runs the firewall only: set --run-router=false --run-service-proxy=false")
	case !config.RunFirewall:
		return errors.New("--run-firewall=false leaves nothing to run")
	case config.MetricsPort > 0:
		return errors.New("this build serves no metrics: set --metrics-port=0")
	case config.Kubeconfig == "":
		return errors.New("--kubeconfig is required")
	}
	rest, err := clientcmd.BuildConfigFromFlags(config.Master, config.Kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(rest)
	if err != nil {
		return err
	}

	// From here pkg/cmd's Run, the firewall's part.
	var ipsetMutex sync.Mutex
	var wg sync.WaitGroup
	stopCh := make(chan struct{})
	healthChan := make(chan *healthcheck.ControllerHeartbeat, 10)
	hc, err := healthcheck.NewHealthController(config)
	if err != nil {
		return err
	}
	wg.Add(1)
	go hc.RunServer(stopCh, &wg)

	factory := informers.NewSharedInformerFactory(client, 0)
	pods := factory.Core().V1().Pods().Informer()
	namespaces := factory.Core().V1().Namespaces().Informer()
	policies := factory.Networking().V1().NetworkPolicies().Informer()
	factory.Start(stopCh)
	for typ, ok := range factory.WaitForCacheSync(stopCh) {
		if !ok {
			return fmt.Errorf("informer cache for %v did not sync", typ)
		}
	}
	hc.SetAlive()
	wg.Add(1)
	go hc.RunCheck(healthChan, stopCh, &wg)

	iptables, ipsets, err := netpol.NewIPTablesHandlers(config)
	if err != nil {
		return err
	}
	npc, err := netpol.NewNetworkPolicyController(client, config, pods, policies, namespaces, &ipsetMutex, iptables, ipsets)
	if err != nil {
		return err
	}
	if _, err := pods.AddEventHandler(npc.PodEventHandler); err != nil {
		return err
	}
	if _, err := namespaces.AddEventHandler(npc.NamespaceEventHandler); err != nil {
		return err
	}
	if _, err := policies.AddEventHandler(npc.NetworkPolicyEventHandler); err != nil {
		return err
	}
	wg.Add(1)
	go npc.Run(healthChan, stopCh, &wg)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	klog.Info("Shutting down the network policy controller")
	close(stopCh)
	wg.Wait()
	return nil
}
