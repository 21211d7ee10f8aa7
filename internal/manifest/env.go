// SPDX-License-Identifier: Apache-2.0

package manifest

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Env is a container's environment as the kubelet hands it to the process, for
// the values a manifest alone decides: literal values and metadata.namespace
// (the pod's namespace), each with its $(NAME) references expanded. Variables
// from other sources (the pod's IP, Secrets, ...) are left out, and so stay
// unexpanded where referenced.
func Env(namespace string, c corev1.Container) map[string]string {
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = Expand(e.Value, env)
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			env[e.Name] = namespace
		}
	}
	return env
}

// Expand replaces each $(NAME) in s that vars defines by its value, and $$ by $,
// as the kubelet expands an env value with the variables defined before it
// (k8s.io/kubernetes/third_party/forked/golang/expansion): a reference to a
// variable not defined stays as written.
func Expand(s string, vars map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := vars[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}
