// SPDX-License-Identifier: Apache-2.0

package podidentityprocessor

import (
	"errors"
	"fmt"
	"strings"
)

// Mode says which side of k8s_attributes an instance runs on.
type Mode string

const (
	// ModeSetAside runs before k8s_attributes: it moves the identity attributes a
	// client sent out of the way, so that k8s_attributes can only associate by the
	// connection and fills them from the pod it finds.
	ModeSetAside Mode = "set_aside"
	// ModeVerify runs after k8s_attributes: it compares what the client claimed
	// with what the connection's pod says, counts every disagreement and drops
	// the claims.
	ModeVerify Mode = "verify"
)

// claimPrefix marks a claim set aside for the verify instance. A client cannot
// smuggle one through: set_aside deletes any attribute with this prefix first.
const claimPrefix = "otelcol_relay.claimed."

// Config configures one pod_identity instance.
type Config struct {
	// Mode is set_aside (before k8s_attributes) or verify (after it).
	Mode Mode `mapstructure:"mode"`
	// Attributes are the resource attributes only the connection may decide.
	// The verify instance needs the same list as its set_aside partner.
	Attributes []string `mapstructure:"attributes"`

	_ struct{}
}

// defaultAttributes are what k8s_attributes can associate on or extract about
// a pod and its owners, node and namespace, and container.id, which names one
// container in the cluster (kubelet_stats' container metrics carry it): a
// client claiming any of them could pass its telemetry off as another
// workload's. k8s.container.name stays: the containers of a pod share its
// network namespace, so the connection cannot tell them apart, and
// k8s_attributes looks the name up among the connection's pod's containers
// only. service.* are the application's own description, not identity.
var defaultAttributes = []string{
	"k8s.pod.uid", "k8s.pod.name", "k8s.namespace.name", "k8s.pod.ip", "k8s.pod.hostname", "k8s.pod.start_time",
	"container.id",
	"k8s.node.name", "k8s.node.uid", "k8s.cluster.uid",
	"k8s.deployment.name", "k8s.deployment.uid", "k8s.replicaset.name", "k8s.replicaset.uid",
	"k8s.statefulset.name", "k8s.statefulset.uid", "k8s.daemonset.name", "k8s.daemonset.uid",
	"k8s.job.name", "k8s.job.uid", "k8s.cronjob.name", "k8s.cronjob.uid",
}

func createDefaultConfig() *Config {
	return &Config{Attributes: append([]string(nil), defaultAttributes...)}
}

// Validate names the field and the value that is wrong.
func (c *Config) Validate() error {
	var errs []error
	switch c.Mode {
	case ModeSetAside, ModeVerify:
	case "":
		errs = append(errs, fmt.Errorf("mode: must be set, to %q (before k8s_attributes) or %q (after it)", ModeSetAside, ModeVerify))
	default:
		errs = append(errs, fmt.Errorf("mode %q: must be %q (before k8s_attributes) or %q (after it)", c.Mode, ModeSetAside, ModeVerify))
	}
	if len(c.Attributes) == 0 {
		errs = append(errs, errors.New("attributes: must name at least one resource attribute, or nothing is protected"))
	}
	seen := map[string]bool{}
	for i, a := range c.Attributes {
		switch {
		case strings.TrimSpace(a) == "":
			errs = append(errs, fmt.Errorf("attributes[%d]: empty name", i))
		case strings.HasPrefix(a, claimPrefix):
			errs = append(errs, fmt.Errorf("attributes[%d] %q: the prefix %q is reserved for claims set aside", i, a, claimPrefix))
		case seen[a]:
			errs = append(errs, fmt.Errorf("attributes[%d] %q: listed twice", i, a))
		}
		seen[a] = true
	}
	return errors.Join(errs...)
}
