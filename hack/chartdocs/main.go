// SPDX-License-Identifier: Apache-2.0

// Command chartdocs writes the Helm chart's values table from its schema: every
// value of deploy/helm/otelcol-relay/values.schema.json, in the schema's order,
// as a Markdown table between the README's `<!-- values:begin -->` and
// `<!-- values:end -->` lines. The schema is what helm checks a values file
// against, so the table cannot name a key helm would refuse, nor miss one it takes.
//
//	go run ./hack/chartdocs [-schema FILE] [-readme FILE] [-check]
//
// make chart-docs runs it; -check writes nothing and exits 1 if the README's
// table is not what the schema gives (its test does the same for `go test`).
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
)

const (
	beginMarker = "<!-- values:begin -->"
	endMarker   = "<!-- values:end -->"
)

func main() {
	chart := "deploy/helm/otelcol-relay"
	schemaPath := flag.String("schema", chart+"/values.schema.json", "the chart's JSON schema (draft-07)")
	readmePath := flag.String("readme", chart+"/README.md", "the README whose values table is rewritten")
	check := flag.Bool("check", false, "write nothing; exit 1 if the README's table is out of date")
	flag.Parse()
	if err := run(*schemaPath, *readmePath, *check); err != nil {
		fmt.Fprintln(os.Stderr, "chartdocs:", err)
		os.Exit(1)
	}
}

func run(schemaPath, readmePath string, check bool) error {
	schema, err := os.ReadFile(schemaPath)
	if err != nil {
		return err
	}
	readme, err := os.ReadFile(readmePath)
	if err != nil {
		return err
	}
	tbl, err := Table(schema)
	if err != nil {
		return fmt.Errorf("%s: %w", schemaPath, err)
	}
	out, err := Rewrite(readme, tbl)
	if err != nil {
		return fmt.Errorf("%s: %w", readmePath, err)
	}
	if bytes.Equal(out, readme) {
		return nil
	}
	if check {
		return fmt.Errorf("%s: the values table is not what %s gives: run make chart-docs and commit", readmePath, schemaPath)
	}
	return os.WriteFile(readmePath, out, 0o644)
}

// node is the part of a draft-07 schema the table reads.
type node struct {
	Type        json.RawMessage   `json:"type"` // "string" or ["string", "null"]
	Description string            `json:"description"`
	Default     json.RawMessage   `json:"default"`
	Enum        []json.RawMessage `json:"enum"`
	Properties  json.RawMessage   `json:"properties"` // an object, read in order
	Items       *node             `json:"items"`
}

// Table returns the Markdown table of a schema's values, keys dotted, in the order
// the schema lists them: a row for each value, then, for an object with
// properties, a row for each of those (the object's own row only if it has a
// description: most are paths, not values), and for an array of objects, a row
// for each property of its items, as `key[].name`. Every value outside an
// array's items must have a description; inside, one without is left out: such an
// item schema often checks a few fields of a Kubernetes object (an EnvVar's name)
// that the array's description names.
func Table(schema []byte) (string, error) {
	var root node
	if err := json.Unmarshal(schema, &root); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("| Key | Type | Default | Description |\n| --- | --- | --- | --- |\n")
	if err := rows(&b, "", &root, false); err != nil {
		return "", err
	}
	return b.String(), nil
}

// rows writes the rows of n's properties, each key prefixed with prefix; inItems
// says n is (in) the schema of an array's items.
func rows(b *strings.Builder, prefix string, n *node, inItems bool) error {
	keys, props, err := properties(n.Properties)
	if err != nil {
		return fmt.Errorf("%sproperties: %w", prefix, err)
	}
	for i, k := range keys {
		key := prefix + k
		var p node
		if err := json.Unmarshal(props[i], &p); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		described := strings.TrimSpace(p.Description) != ""
		switch {
		case described:
			if err := row(b, key, &p); err != nil {
				return err
			}
		case len(p.Properties) == 0 && !inItems:
			return fmt.Errorf("%s has no description", key)
		}
		if len(p.Properties) > 0 {
			if err := rows(b, key+".", &p, inItems); err != nil {
				return err
			}
		}
		if p.Items != nil && len(p.Items.Properties) > 0 {
			if err := rows(b, key+"[].", p.Items, true); err != nil {
				return err
			}
		}
	}
	return nil
}

func row(b *strings.Builder, key string, n *node) error {
	typ, err := typeName(n.Type)
	if err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	if typ == "array" && n.Items != nil {
		if it, ierr := typeName(n.Items.Type); ierr == nil && it != "" {
			typ += " of " + it
		}
	}
	def := ""
	if len(n.Default) > 0 {
		if def, err = compact(n.Default); err != nil {
			return fmt.Errorf("%s: default: %w", key, err)
		}
		def = "`" + def + "`"
	}
	desc := strings.Join(strings.Fields(n.Description), " ")
	if len(n.Enum) > 0 {
		vals := make([]string, len(n.Enum))
		for i, e := range n.Enum {
			v, err := compact(e)
			if err != nil {
				return fmt.Errorf("%s: enum: %w", key, err)
			}
			vals[i] = "`" + v + "`"
		}
		desc += " One of " + strings.Join(vals, ", ") + "."
	}
	fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", key, cell(typ), cell(def), cell(desc))
	return nil
}

// properties returns the keys of a JSON object in the order they are written,
// and each key's value.
func properties(raw json.RawMessage) ([]string, []json.RawMessage, error) {
	if len(raw) == 0 {
		return nil, nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, errors.New("not an object")
	}
	var keys []string
	var vals []json.RawMessage
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		k, _ := t.(string)
		if seen[k] {
			return nil, nil, fmt.Errorf("%q twice", k)
		}
		seen[k] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", k, err)
		}
		keys = append(keys, k)
		vals = append(vals, v)
	}
	return keys, vals, nil
}

// typeName reads "type": a name, or a list of names written "a \| b".
func typeName(raw json.RawMessage) (string, error) {
	if len(raw) == 0 {
		return "", nil
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		return one, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return "", errors.New("type is neither a string nor a list of strings")
	}
	return strings.Join(many, " | "), nil
}

// compact is a JSON value on one line, its keys in the schema's order.
func compact(raw json.RawMessage) (string, error) {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return "", err
	}
	return b.String(), nil
}

// cell escapes what would end a table cell, and a < that would open an HTML tag
// (`<name>.crt` would show as ".crt").
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "<", `\<`).Replace(s)
}

// Rewrite replaces what lies between the README's marker lines with table.
func Rewrite(readme []byte, table string) ([]byte, error) {
	s := string(readme)
	begin := strings.Index(s, beginMarker+"\n")
	end := strings.Index(s, endMarker)
	if begin < 0 || end < 0 || end < begin || strings.Count(s, beginMarker) != 1 || strings.Count(s, endMarker) != 1 {
		return nil, fmt.Errorf("want one %q line, then one %q line", beginMarker, endMarker)
	}
	begin += len(beginMarker) + 1
	return []byte(s[:begin] + table + s[end:]), nil
}
