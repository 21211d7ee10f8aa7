// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The table of testdata's schema: keys in the schema's order (not sorted), dotted,
// arrays of objects as key[].name, unions, enums, defaults as compact JSON with
// their keys in order, a | escaped.
func TestTable(t *testing.T) {
	schema, err := os.ReadFile("testdata/values.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/table.md")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Table(schema)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("Table(testdata/values.schema.json):\n%s\nwant (testdata/table.md):\n%s", got, want)
	}
}

// A value without a description is refused, naming its key: the table would say
// nothing of it. In an array's items, it is left out.
func TestTableNeedsDescriptions(t *testing.T) {
	_, err := Table([]byte(`{"properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}}}}}`))
	if err == nil || !strings.Contains(err.Error(), "a.b has no description") {
		t.Errorf("Table of an undescribed a.b: %v, want an error naming a.b", err)
	}
	got, err := Table([]byte(`{"properties": {"l": {"type": "array", "description": "L.", "items": {"properties": {"n": {"type": "integer"}}}}}}`))
	if err != nil || strings.Contains(got, "l[].n") {
		t.Errorf("Table of an undescribed l[].n: %v\n%s\nwant no error and no row", err, got)
	}
	if _, err := Table([]byte(`{"properties": {"a": {"description": "A."}, "a": {"description": "B."}}}`)); err == nil {
		t.Error("Table accepted a key written twice")
	}
}

// run rewrites only between the markers; -check fails on a stale table naming the
// README, and passes once it has been written.
func TestRunCheck(t *testing.T) {
	dir := t.TempDir()
	readme := filepath.Join(dir, "README.md")
	before := "# chart\n\nintro\n\n" + beginMarker + "\nstale\n" + endMarker + "\n\nafter\n"
	if err := os.WriteFile(readme, []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	schema := "testdata/values.schema.json"
	err := run(schema, readme, true)
	if err == nil || !strings.Contains(err.Error(), readme) || !strings.Contains(err.Error(), "make chart-docs") {
		t.Fatalf("-check on a stale table: %v, want an error naming %s", err, readme)
	}
	if got, _ := os.ReadFile(readme); string(got) != before {
		t.Fatalf("-check wrote the README:\n%s", got)
	}
	if err := run(schema, readme, false); err != nil {
		t.Fatal(err)
	}
	table, _ := os.ReadFile("testdata/table.md")
	want := "# chart\n\nintro\n\n" + beginMarker + "\n" + string(table) + endMarker + "\n\nafter\n"
	if got, _ := os.ReadFile(readme); string(got) != want {
		t.Fatalf("README after run:\n%s\nwant:\n%s", got, want)
	}
	if err := run(schema, readme, true); err != nil {
		t.Errorf("-check after run: %v", err)
	}
	if _, err := Rewrite([]byte("no markers\n"), "x"); err == nil {
		t.Error("Rewrite of a README without markers passed")
	}
	if _, err := Rewrite([]byte(endMarker+"\n"+beginMarker+"\n"), "x"); err == nil {
		t.Error("Rewrite of a README with the markers swapped passed")
	}
}

// The chart's README holds the table its schema gives (make chart-docs writes it).
func TestChartReadme(t *testing.T) {
	chart := filepath.Join("..", "..", "deploy", "helm", "otelcol-relay")
	schema := filepath.Join(chart, "values.schema.json")
	if _, err := os.Stat(schema); errors.Is(err, fs.ErrNotExist) {
		t.Skipf("%s does not exist yet", schema)
	}
	if err := run(schema, filepath.Join(chart, "README.md"), true); err != nil {
		t.Error(err)
	}
}
